// The queues list, the create form, and a queue's own page with its settings.
import { PAGE_SIZE, FIGURES_AT_ONCE, state, h, append, clear, refill, notice, api, enc, link, failure, duration, shardsText } from "./core.js";
import { sample, sparkline } from "./charts.js";
import { crumbs, pageHead, loading, missing, figuresList, input, confirmAction, statsRow, sendPanel } from "./pieces.js";

// ---- views ----------------------------------------------------------------------------------------------------

export const COLUMNS = [
  ["name", "Name", false],
  ["kind", "Kind", false],
  ["shards", "Shards", true],
  ["visible", "Visible", true],
  ["in_flight", "In flight", true],
  ["delayed", "Delayed", true],
  ["dlq", "DLQ", true],
  ["oldest", "Oldest age", true],
  ["clients", "Clients", true],
];

export function queuesView(root, params) {
  const figures = new Map();
  let queues = [];
  let page = Math.max(1, parseInt(params.get("page") || "1", 10) || 1);
  let sort = params.get("sort") || "name";
  let descending = params.get("dir") === "desc";
  const filter = h("input", { id: "filter", type: "search", value: params.get("filter") || "", autocomplete: "off" });
  const count = h("p", { class: "muted", id: "count", role: "status" }, "Reading the list of queues…");
  const table = h("table", { id: "queues" });
  const pager = h("div", { class: "pager" });
  append(
    root,
    [pageHead("Queues", [h("a", { class: "button", href: "#/create", id: "create-queue" }, "Create a queue")]),
    h("div", { class: "toolbar" }, h("div", {}, h("label", { for: "filter" }, "Filter by name"), filter), count),
    h("div", { class: "scroll" }, table),
    pager],
  );

  function keepInUrl() {
    const query = new URLSearchParams();
    if (filter.value) query.set("filter", filter.value);
    if (sort !== "name") query.set("sort", sort);
    if (descending) query.set("dir", "desc");
    if (page > 1) query.set("page", String(page));
    const hash = "#/" + (query.toString() ? "?" + query.toString() : "");
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  function value(queue, key) {
    if (key === "name") return queue.name;
    if (key === "kind") return queue.fifo ? "FIFO" : "standard";
    if (key === "shards") return typeof queue.shards === "number" ? queue.shards : -1;
    const known = figures.get(queue.name);
    if (!known || known.error) return null;
    if (key === "clients") return known.clients;
    if (key === "oldest") return known.stats.oldest_age_seconds || 0;
    return known.stats[key];
  }

  function shown() {
    const wanted = filter.value.trim().toLowerCase();
    const rows = queues.filter((queue) => queue.name.toLowerCase().includes(wanted));
    rows.sort((a, b) => {
      const x = value(a, sort);
      const y = value(b, sort);
      if (x === y) return a.name < b.name ? -1 : 1;
      if (x === null) return 1;
      if (y === null) return -1;
      const order = x < y ? -1 : 1;
      return descending ? -order : order;
    });
    return rows;
  }

  function tell(matching, onPage) {
    const reading = onPage.filter((queue) => !figures.has(queue.name)).length;
    count.textContent = `${matching} of ${queues.length} queues` + (reading ? `; reading the figures of ${reading}…` : "");
  }

  function render() {
    const rows = shown();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
    page = Math.min(page, pages);
    const visible = rows.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
    tell(rows.length, visible);
    clear(table);
    const head = h("tr", {});
    for (const [key, title, numeric] of COLUMNS) {
      const sorted = key === sort ? (descending ? "descending" : "ascending") : null;
      const arrow = sorted ? (descending ? "▼" : "▲") : "";
      head.append(
        h(
          "th",
          { scope: "col", class: numeric ? "num" : null, "aria-sort": sorted },
          h("button", { type: "button", class: "sort", "data-sort": key, onclick: () => sortBy(key) }, title, h("span", { class: "arrow", "aria-hidden": "true" }, arrow)),
        ),
      );
    }
    head.append(h("th", { scope: "col" }, "Backlog while open"));
    table.append(h("caption", {}, "Every queue, with its figures summed over its clients"), h("thead", {}, head));
    const body = h("tbody", {});
    for (const queue of visible) body.append(queueRow(queue));
    table.append(body);
    clear(pager);
    if (pages > 1) {
      append(
        pager,
        [h("button", { type: "button", class: "secondary", disabled: page <= 1, onclick: () => go(page - 1) }, "Previous page"),
        h("span", {}, `Page ${page} of ${pages}`),
        h("button", { type: "button", class: "secondary", disabled: page >= pages, onclick: () => go(page + 1) }, "Next page")],
      );
    }
    keepInUrl();
    return visible;
  }

  function queueRow(queue) {
    const known = figures.get(queue.name);
    const stats = known ? (known.error ? known : known.stats) : null;
    return h(
      "tr",
      { "data-queue": queue.name },
      h("th", { scope: "row" }, h("a", { href: link.queue(queue.name) }, queue.name)),
      h("td", {}, queue.fifo ? "FIFO" : "standard"),
      h("td", { class: "num" }, shardsText(queue)),
      statsRow(stats),
      known && !known.error ? h("td", { class: "num" }, known.clients) : h("td", { class: "num loading", "aria-label": "loading" }, "…"),
      h("td", {}, sparkline(queue.name)),
    );
  }

  function sortBy(key) {
    descending = key === sort ? !descending : key !== "name" && key !== "kind";
    sort = key;
    render();
  }

  function go(next) {
    page = next;
    loadFigures(render());
  }

  async function loadFigures(rows) {
    // The list answers at once; the figures follow a few queues at a time, each row filled in as they come.
    root.removeAttribute("data-figures");
    for (let start = 0; start < rows.length; start += FIGURES_AT_ONCE) {
      const part = rows.slice(start, start + FIGURES_AT_ONCE);
      const answer = await api("GET", "/figures?" + part.map((queue) => "q=" + enc(queue.name)).join("&"));
      if (!state.view || state.view.root !== root) return;
      for (const [name, known] of Object.entries(answer.figures)) {
        figures.set(name, known);
        if (!known.error) sample(name, known.stats);
      }
      for (const queue of part) fillRow(queue);
      tell(shown().length, rows);
    }
    root.setAttribute("data-figures", "complete");
  }

  function fillRow(queue) {
    const row = [...table.querySelectorAll("tbody tr")].find((tr) => tr.getAttribute("data-queue") === queue.name);
    if (row) row.replaceWith(queueRow(queue));
  }

  async function refresh() {
    const answer = await api("GET", "/queues");
    queues = answer.queues;
    const rows = render();
    root.setAttribute("data-loaded", "true");
    await loadFigures(rows);
  }

  const filtered = () => {
    page = 1;
    loadFigures(render()).catch((error) => notice(failure(error), "error"));
  };
  // Each key typed, and a field emptied at once (its clear button, or a clear that only fires `change`).
  filter.addEventListener("input", filtered);
  filter.addEventListener("change", filtered);
  return { refresh };
}

export const UNITS = [["60", "minutes"], ["3600", "hours"], ["86400", "days"]];

// A length of time given in the unit a person thinks in (retention: days), sent in seconds.
export function durationInput(id, labelText, amount, unit) {
  return h(
    "div",
    {},
    h("label", { for: id }, labelText),
    h(
      "div",
      { class: "joined" },
      h("input", { id, name: id, type: "number", min: 1, value: amount }),
      h("select", { id: id + "-unit", "aria-label": labelText + ": unit" }, UNITS.map(([size, name]) => h("option", { value: size, selected: size === unit }, name))),
    ),
  );
}

export function createView(root) {
  const errors = h("p", { id: "create-error", class: "error", role: "alert" });
  const standard = h("input", { id: "kind-standard", type: "radio", name: "kind", value: "standard", checked: true });
  const fifo = h("input", { id: "fifo", type: "radio", name: "kind", value: "fifo" });
  const contentBased = h("input", { id: "content_based_dedup", type: "checkbox", disabled: true });
  const shardsMode = h("select", { id: "shards-mode" }, h("option", { value: "auto" }, "automatic: grow and shrink with the load"), h("option", { value: "fixed" }, "fixed"));
  const fixedShards = input("shards", "Shards, when fixed", { type: "number", min: 1, value: 1, disabled: true });
  const nameHint = h("p", { class: "muted", id: "name-hint" });
  const kindChanged = () => {
    contentBased.disabled = !fifo.checked;
    if (!fifo.checked) contentBased.checked = false;
    nameHint.textContent = fifo.checked ? "A FIFO queue's name ends in .fifo." : "";
  };
  standard.addEventListener("change", kindChanged);
  fifo.addEventListener("change", kindChanged);
  shardsMode.addEventListener("change", () => (fixedShards.querySelector("input").disabled = shardsMode.value !== "fixed"));
  const form = h(
    "form",
    { id: "create", class: "columns" },
    h(
      "fieldset",
      { class: "panel" },
      h("legend", {}, "The queue"),
      input("name", "Name (1-80 of A-Z a-z 0-9 _ -)", { required: true, autocomplete: "off" }),
      nameHint,
      h(
        "div",
        { role: "radiogroup", "aria-label": "Type" },
        h("div", { class: "choice" }, standard, h("label", { for: "kind-standard" }, "Standard: highest priority first, at-least-once")),
        h("div", { class: "choice" }, fifo, h("label", { for: "fifo" }, "FIFO: in order within each group, exactly once within the dedup window")),
      ),
      h(
        "div",
        { class: "choice" },
        contentBased,
        h("label", { for: "content_based_dedup" }, "Content-based dedup (FIFO): a send without a dedup id is deduplicated by its body's hash. Cannot be changed later."),
      ),
    ),
    h(
      "fieldset",
      { class: "panel" },
      h("legend", {}, "Delivery"),
      h(
        "div",
        { class: "grid" },
        input("visibility_timeout", "Visibility timeout (s)", { type: "number", min: 0, placeholder: "30" }),
        input("max_receive_count", "Receives before the DLQ (0: never)", { type: "number", min: 0, placeholder: "5" }),
        durationInput("retention", "Retention", 4, "86400"),
        input("delay_seconds", "Default delay (s)", { type: "number", min: 0, placeholder: "0" }),
      ),
    ),
    h(
      "fieldset",
      { class: "panel" },
      h("legend", {}, "Capacity"),
      h("div", {}, h("label", { for: "shards-mode" }, "Shards"), shardsMode),
      fixedShards,
    ),
    h("div", { class: "actions wide" }, h("button", { type: "submit" }, "Create the queue"), errors),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = form.querySelector("#name").value.trim();
    const settings = {};
    if (fifo.checked) settings.fifo = true;
    if (contentBased.checked) settings.content_based_dedup = true;
    for (const key of ["visibility_timeout", "max_receive_count", "delay_seconds"]) {
      const raw = form.querySelector("#" + key).value.trim();
      if (raw !== "") settings[key] = Number(raw);
    }
    settings.retention_seconds = Number(form.querySelector("#retention").value) * Number(form.querySelector("#retention-unit").value);
    if (shardsMode.value === "fixed") settings.shards = Number(fixedShards.querySelector("input").value);
    errors.textContent = "";
    try {
      const answer = await api("POST", `/queues/${enc(name)}`, settings);
      notice(answer.created ? `Created queue ${name}` : `Queue ${name} exists with these settings`, "ok", true);
      location.hash = link.queue(name);
    } catch (error) {
      errors.textContent = failure(error);
    }
  });
  append(root, [crumbs(["Queues", link.queues()], ["Create a queue"]), pageHead("Create a queue"), form]);
  root.setAttribute("data-loaded", "true");
  return { refresh: null };
}

// The settings a live queue may change, with the unit of each; a length of time also shows as `dq` prints it.
export const EDITABLE = [
  ["visibility_timeout", "Visibility timeout (s)", true],
  ["max_receive_count", "Receives before the DLQ (0: never)", false],
  ["retention_seconds", "Retention (s)", true],
  ["delay_seconds", "Default delay (s)", true],
  ["dedup_window_seconds", "Dedup window (s)", true],
  ["shards", "Shards (a number, or auto)", false],
  ["min_shards", "Fewest shards when auto", false],
  ["max_shards", "Most shards when auto", false],
  ["receive_wait_seconds", "Default long poll (s)", true],
  ["max_message_bytes", "Largest body (bytes)", false],
];

// An automatic queue's shards read "auto" (its current count beside): saving the row as shown keeps it automatic.
export function settingValue(described, key) {
  return key === "shards" && described.auto_shards ? "auto" : described[key];
}

export function settingHint(described, key, seconds) {
  if (key === "shards") return described.auto_shards ? `now ${described.shards}` : "fixed";
  return seconds ? duration(described[key]) : "";
}

export function settingsForm(queue, initial) {
  const form = h("form", { id: "settings", class: "stack", "aria-label": "Settings" });
  form.addEventListener("submit", (event) => event.preventDefault());
  function build(described, saved) {
    refill(form, 
      h("p", { class: "muted" }, `${described.fifo ? "FIFO" : "Standard"} queue` + (described.content_based_dedup ? ", content-based dedup" : "") + ": fixed when it was created."),
      ...EDITABLE.filter(([key]) => key in described && (described.auto_shards || !key.endsWith("_shards"))).map(([key, title, seconds]) => {
        const id = "setting-" + key;
        const field = h("input", { id, name: key, type: key === "shards" ? "text" : "number", value: settingValue(described, key), "aria-describedby": id + "-hint" });
        const hint = h("span", { class: "hint", id: id + "-hint" }, settingHint(described, key, seconds));
        const message = h("span", { class: "message", id: id + "-message", role: "status" });
        const save = h("button", { type: "button", class: "secondary", "aria-describedby": id + "-message" }, "Save");
        if (saved && saved.key === key) {
          message.className = "message " + saved.kind;
          message.textContent = saved.text;
        }
        field.addEventListener("input", () => (hint.textContent = seconds && /^\d+$/.test(field.value) ? duration(Number(field.value)) : ""));
        field.addEventListener("keydown", (event) => {
          if (event.key === "Enter") save.click();
        });
        save.addEventListener("click", async () => {
          const raw = field.value.trim();
          message.className = "message";
          message.textContent = "saving…";
          try {
            const changed = await api("POST", `/queues/${enc(queue)}/settings`, { [key]: /^-?\d+$/.test(raw) ? Number(raw) : raw });
            build(changed, { key, kind: "ok", text: "saved" });
          } catch (error) {
            message.className = "message error";
            message.textContent = failure(error);
          }
        });
        return h("div", { class: "field" }, h("label", { for: id }, title), field, hint, save, message);
      }),
    );
  }
  build(initial);
  return form;
}

export function queueView(root, queue) {
  const figures = h("div", {}, figuresList(null));
  const priorities = h("section", { class: "panel", "aria-labelledby": "priorities-title" });
  const clients = h("div", {}, loading("Reading the clients…"));
  const body = h("div", { class: "columns" }, loading("Reading the queue…"));
  let built = false;
  let gone = false;
  let sendArea = null;
  let clientNames = [];
  append(root, [crumbs(["Queues", link.queues()], [queue]), pageHead(`Queue ${queue}`), figures, body]);

  async function deleteQueue() {
    const sure = await confirmAction({
      title: `Delete the queue ${queue}?`,
      text: "Every message of every client goes with it, its DLQ included. This cannot be undone.",
      confirm: "Delete the queue",
      typed: queue,
    });
    if (!sure) return;
    // The page reads nothing more: a refresh answered while the queue goes would put its own notice (or none)
    // in place of this one before the list opens.
    gone = true;
    try {
      await api("DELETE", `/queues/${enc(queue)}`);
      notice(`Deleted queue ${queue} and its messages`, "ok", true);
      location.hash = link.queues();
    } catch (error) {
      gone = false;
      notice(failure(error), "error");
    }
  }

  function build(described) {
    const actions = root.querySelector("#page-actions");
    append(actions, [
      h("span", { class: "badge" }, described.fifo ? "FIFO" : "Standard"),
      described.content_based_dedup ? h("span", { class: "badge" }, "content-based dedup") : null,
      h("a", { class: "button secondary", href: link.queueCharts(queue) }, "Charts"),
      h("button", { type: "button", class: "danger", id: "delete-queue", onclick: deleteQueue }, "Delete the queue…"),
    ]);
    const openClient = h("form", { class: "toolbar", id: "open-client" });
    append(openClient, [
      h(
        "div",
        {},
        h("label", { for: "client-id" }, "Open a client's sub-queue (one that has not sent yet too)"),
        h("input", { id: "client-id", list: "known-clients", required: true, autocomplete: "off" }),
        h("datalist", { id: "known-clients" }),
      ),
      h("button", { type: "submit" }, "Open"),
    ]);
    openClient.addEventListener("submit", (event) => {
      event.preventDefault();
      location.hash = link.client(queue, openClient.querySelector("#client-id").value.trim());
    });
    sendArea = h("section", { class: "panel", "aria-labelledby": "send-title" }, h("h2", { id: "send-title" }, "Send a message"));
    refill(body, 
      h(
        "div",
        { class: "main-column" },
        h("section", { class: "panel", "aria-labelledby": "clients-title" }, h("h2", { id: "clients-title" }, "Clients"), clients, openClient),
        described.fifo ? null : priorities,
        h("section", { class: "panel", "aria-labelledby": "settings-title" }, h("h2", { id: "settings-title" }, "Settings"), settingsForm(queue, described)),
      ),
      h("div", { class: "side-column" }, sendArea),
    );
    sendArea.append(sendPanel(described, null, clientNames, () => refresh()));
  }

  function showPriorities(stats) {
    const bands = stats.by_priority || {};
    const rows = Object.keys(bands).length
      ? Object.entries(bands).sort((a, b) => Number(b[0]) - Number(a[0]))
      : [["0", { visible: stats.visible, in_flight: stats.in_flight, delayed: stats.delayed }]];
    refill(priorities, 
      h("h2", { id: "priorities-title" }, "By priority, every client together"),
      h(
        "table",
        { id: "priorities" },
        h("caption", {}, "Received highest priority first, then the clients in a fair rotation"),
        h("thead", {}, h("tr", {}, ["Priority", "Visible", "In flight", "Delayed"].map((t, i) => h("th", { scope: "col", class: i ? "num" : null }, t)))),
        h(
          "tbody",
          {},
          rows.map(([priority, counts]) =>
            h("tr", {}, h("th", { scope: "row" }, priority), ["visible", "in_flight", "delayed"].map((k) => h("td", { class: "num" }, counts[k] || 0))),
          ),
        ),
      ),
    );
  }

  function showClients(answer) {
    for (const list of root.querySelectorAll("#known-clients, #send-clients")) refill(list, ...clientNames.map((name) => h("option", { value: name })));
    for (const entry of answer.clients) sample(`${queue}/${entry.client}`, entry.stats);
    refill(clients, 
      answer.clients.length
        ? h(
            "div",
            { class: "scroll" },
            h(
              "table",
              { id: "clients" },
              h("caption", {}, "Each client's sub-queue"),
              h("thead", {}, h("tr", {}, ["Client", "Visible", "In flight", "Delayed", "DLQ", "Oldest age", "Backlog while open"].map((t, i) => h("th", { scope: "col", class: i && i < 6 ? "num" : null }, t)))),
              h(
                "tbody",
                {},
                answer.clients.map((entry) =>
                  h(
                    "tr",
                    { "data-client": entry.client },
                    h("th", { scope: "row" }, h("a", { href: link.client(queue, entry.client) }, entry.client)),
                    statsRow(entry.stats),
                    h("td", {}, sparkline(`${queue}/${entry.client}`)),
                  ),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No client has sent to this queue yet: send a message to start one."),
    );
  }

  async function refresh() {
    if (gone) return;
    let answer;
    try {
      answer = await api("GET", `/queues/${enc(queue)}`);
    } catch (error) {
      if (gone) return; // deleted from this page meanwhile: its notice stands
      if (error.status !== 404) throw error;
      gone = true;
      missing(root, error, `No queue named ${queue}`);
      return;
    }
    if (gone) return;
    const described = answer.queue;
    sample(queue, described.stats);
    refill(figures, figuresList(described.stats));
    clientNames = answer.clients.map((entry) => entry.client);
    if (!built) {
      build(described);
      built = true;
    }
    if (!described.fifo) showPriorities(described.stats);
    showClients(answer);
    root.setAttribute("data-loaded", "true");
  }
  return { refresh };
}
