// The dq console's page: a hash router over views of queues, clients, messages and dead letters.
// Every name and message is put on the page as text (textContent, text nodes, attribute values): nothing that the
// API returns is ever parsed as HTML. The console server signs and forwards the API calls; this script holds no AWS
// credential, only the console's own secret, which it sends to the console server alone.
"use strict";

const REFRESH_MS = 5000;
const PAGE_SIZE = 50;
const FIGURES_AT_ONCE = 10;
const MAX_SAMPLES = 720;
const SERIES = ["visible", "in_flight", "delayed", "dlq"];
const SERIES_NAMES = { visible: "Visible", in_flight: "In flight", delayed: "Delayed", dlq: "DLQ" };

const SECRET_KEY = "dq-console-secret";

// A message must stay deliverable this long within its retention: the longest delay is the retention less this.
const DELIVERY_WINDOW_SECONDS = 60;
// The client SQS's protocol sends to when its URL names none: where a send from a queue's page goes by default.
const DEFAULT_CLIENT = "default";

const state = {
  paused: false,
  view: null,
  timer: null,
  samples: new Map(),
  received: new Map(),
  secret: "",
  carry: false,
  dialogs: 0,
};

// ---- DOM, text only -------------------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// The node's children replaced: null, false and nested lists skipped or flattened as `h` does.
function refill(node, ...children) {
  return append(clear(node), children);
}

// A notice is about the view it was given on, and goes when the operator leaves it; `carry` keeps it over the one
// navigation the action itself makes (a queue created opens its page, a queue deleted the list).
function notice(text, kind, carry) {
  state.carry = Boolean(carry);
  const box = document.getElementById("notice");
  box.textContent = text || "";
  box.className = "notice " + (kind || "");
}

// The header's line about the data on screen: loading, when it was last read, paused, or why it is not.
function status(text, kind) {
  const line = document.getElementById("status");
  line.textContent = text;
  line.className = "status " + (kind || "");
}

// ---- the console's secret -------------------------------------------------------------------------------------

// The printed URL gives the secret in its fragment (`#token=…`), which the browser sends to no server. The page
// keeps it in this tab's sessionStorage, which pages of this origin alone read (another port of 127.0.0.1 is
// another origin) and which a reload keeps, and sends it in a header: never a cookie, which the browser would send
// to every server on 127.0.0.1 whatever its port.
function takeSecret() {
  const given = /^#token=([\w-]+)$/.exec(location.hash);
  if (given) history.replaceState(null, "", location.pathname);
  try {
    if (given) sessionStorage.setItem(SECRET_KEY, given[1]);
    return sessionStorage.getItem(SECRET_KEY) || "";
  } catch (error) {
    return given ? given[1] : ""; // storage refused: this page holds it until it is left or reloaded
  }
}

// ---- API ------------------------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json", Authorization: "Bearer " + state.secret };
  const options = { method, credentials: "omit", headers };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch("/api" + path, options);
  } catch (error) {
    throw new ApiError(0, "ConnectionError", "the console server does not answer: is `dq console` running?");
  }
  let text = "";
  let answer = null;
  try {
    text = await response.text();
    answer = JSON.parse(text);
  } catch (error) {
    answer = null;
  }
  if (!response.ok) {
    // The server's own refusals are a line of text (a page without the secret is told which URL to open).
    const failure = (answer && answer.error) || {};
    const message = failure.message || text.trim() || "refused";
    throw new ApiError(response.status, failure.code || "HTTP" + response.status, message);
  }
  return answer;
}

const enc = encodeURIComponent;
const sub = (queue, client) => `/queues/${enc(queue)}/clients/${enc(client)}`;
const link = {
  queues: () => "#/",
  queue: (q) => `#/q/${enc(q)}`,
  queueCharts: (q) => `#/q/${enc(q)}/charts`,
  client: (q, c) => `#/q/${enc(q)}/c/${enc(c)}`,
  clientCharts: (q, c) => `#/q/${enc(q)}/c/${enc(c)}/charts`,
  dlq: (q, c) => `#/q/${enc(q)}/c/${enc(c)}/dlq`,
  message: (q, c, id) => `#/q/${enc(q)}/c/${enc(c)}/m/${enc(id)}`,
};

function failure(error) {
  return `${error.code || "Error"}: ${error.message}`;
}

// ---- formatting -----------------------------------------------------------------------------------------------

function when(ms) {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toLocaleString();
}

// Today's times by the clock alone, in a table or a state where a whole date crowds out what matters.
function whenShort(ms) {
  if (ms === null || ms === undefined) return "—";
  const date = new Date(ms);
  return date.toDateString() === new Date().toDateString() ? date.toLocaleTimeString() : date.toLocaleString();
}

// A table's time cell: how long ago, as `dq` prints it, with the date and time in its title.
function timeCell(ms) {
  if (ms === null || ms === undefined) return h("td", {}, "—");
  const seconds = Math.round((Date.now() - ms) / 1000);
  return h("td", { class: "nowrap", title: when(ms) }, seconds >= 0 ? `${age(seconds)} ago` : `in ${age(-seconds)}`);
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

// As `dq` prints a setting: the largest unit that keeps the number whole (`45 s`, `12 min`, `4 d`).
function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}`;
  }
  return `${seconds} s`;
}

function shardsText(queue) {
  // As `dq queues ls` prints them: an automatic queue's current count, marked.
  return queue.auto_shards ? `${queue.shards} auto` : String(queue.shards);
}

function preview(text, length) {
  const flat = String(text).replace(/\s+/g, " ");
  return flat.length > length ? flat.slice(0, length) + "…" : flat;
}

function stateText(message) {
  // `until` (a browsed message's) is when the state ends; a FIFO message's claim ends with its group's hold.
  const until = message.until ?? message.visible_at;
  if (message.state === "in_flight") return `in flight until ${whenShort(until)}`;
  if (message.state === "delayed") return `delayed until ${whenShort(until)}`;
  if (message.state === "dlq") return "in the DLQ";
  return "visible";
}

function prettyBody(body) {
  try {
    const parsed = JSON.parse(body);
    if (parsed !== null && typeof parsed === "object") return { text: JSON.stringify(parsed, null, 2), json: true };
  } catch (error) {
    // not JSON: shown as it is
  }
  return { text: body, json: false };
}

// ---- samples and charts ---------------------------------------------------------------------------------------

function sample(key, stats) {
  if (!stats || stats.error) return;
  const list = state.samples.get(key) || [];
  list.push({
    t: Date.now(),
    visible: stats.visible || 0,
    in_flight: stats.in_flight || 0,
    delayed: stats.delayed || 0,
    dlq: stats.dlq || 0,
    oldest: stats.oldest_age_seconds || 0,
  });
  if (list.length > MAX_SAMPLES) list.shift();
  state.samples.set(key, list);
}

// The backlog (visible, in flight and delayed) the page has sampled, drawn from 0 to its highest sample, which is
// printed beside it: a line alone says nothing of whether it climbs to 3 or to 3 million.
function sparkline(key) {
  const points = state.samples.get(key) || [];
  const box = svg("svg", { class: "spark", viewBox: "0 0 120 24", "aria-hidden": "true" });
  const values = points.map((p) => p.visible + p.in_flight + p.delayed);
  const top = Math.max(1, ...values);
  const latest = values.length ? values[values.length - 1] : null;
  const scale = h(
    "span",
    { class: "spark-scale" },
    latest === null ? "no sample yet" : `max ${Math.max(...values)}`,
  );
  const cell = h(
    "span",
    {
      class: "spark-cell",
      role: "img",
      "aria-label": latest === null ? "no sample yet" : `backlog over ${points.length} samples: now ${latest}, highest ${Math.max(...values)}`,
    },
    box,
    scale,
  );
  if (points.length < 1) return cell;
  const step = values.length > 1 ? 118 / (values.length - 1) : 0;
  const coords = values.map((v, i) => `${(1 + i * step).toFixed(1)},${(22 - (v / top) * 20).toFixed(1)}`);
  if (coords.length === 1) coords.push(`119,${coords[0].split(",")[1]}`);
  box.append(svg("line", { class: "axis", x1: 0, y1: 23, x2: 120, y2: 23 }));
  box.append(svg("polyline", { class: "series s-visible", points: coords.join(" ") }));
  return cell;
}

function lineChart(title, points, names, unit) {
  // A point may lack a series (a period CloudWatch holds nothing for): that series skips it.
  const width = 760;
  const height = 220;
  const left = 48;
  const bottom = 24;
  const box = svg("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img" });
  const has = (p, name) => typeof p[name] === "number";
  const lastOf = (name) => [...points].reverse().find((p) => has(p, name));
  const summary = points.length
    ? names.map((name) => `${SERIES_NAMES[name] || name} ${lastOf(name) ? lastOf(name)[name] : "none"}`).join(", ")
    : "none";
  box.setAttribute("aria-label", `${title}: ${points.length} ${unit || "samples"}; latest ${summary}`);
  const top = Math.max(1, ...points.flatMap((p) => names.filter((name) => has(p, name)).map((name) => p[name])));
  box.append(svg("line", { class: "axis", x1: left, y1: 8, x2: left, y2: height - bottom }));
  box.append(svg("line", { class: "axis", x1: left, y1: height - bottom, x2: width - 8, y2: height - bottom }));
  const topLabel = svg("text", { class: "label", x: 4, y: 14 });
  topLabel.textContent = String(top);
  const zero = svg("text", { class: "label", x: 4, y: height - bottom });
  zero.textContent = "0";
  box.append(topLabel, zero);
  if (points.length) {
    const first = points[0].t;
    const span = Math.max(1, points[points.length - 1].t - first);
    const since = svg("text", { class: "label", x: left, y: height - 6 });
    since.textContent = new Date(first).toLocaleTimeString();
    const until = svg("text", { class: "label", x: width - 90, y: height - 6 });
    until.textContent = new Date(points[points.length - 1].t).toLocaleTimeString();
    box.append(since, until);
    for (const name of names) {
      const coords = points.filter((p) => has(p, name)).map((p) => {
        const x = points.length > 1 ? left + ((p.t - first) / span) * (width - left - 10) : left;
        const y = height - bottom - (p[name] / top) * (height - bottom - 12);
        return `${x.toFixed(1)},${y.toFixed(1)}`;
      });
      if (!coords.length) continue;
      if (coords.length === 1) coords.push(`${width - 10},${coords[0].split(",")[1]}`);
      box.append(svg("polyline", { class: `series s-${name}`, points: coords.join(" ") }));
    }
  }
  return box;
}

function legend(names) {
  return h("ul", { class: "legend" }, names.map((name) => h("li", { class: `s-${name}` }, SERIES_NAMES[name] || "Oldest age (s)")));
}

// ---- shared pieces --------------------------------------------------------------------------------------------

function crumbs(...parts) {
  return h(
    "nav",
    { class: "crumbs", "aria-label": "Breadcrumb" },
    parts.map(([text, href]) => (href ? h("a", { href }, text) : h("span", { "aria-current": "page" }, text))),
  );
}

// A view's title on the left and its actions on the right, where the eye looks for them on a console's page.
function pageHead(title, actions) {
  return h("div", { class: "page-head" }, h("h1", {}, title), h("div", { class: "actions", id: "page-actions" }, actions || []));
}

function loading(text) {
  return h("p", { class: "loading", role: "status" }, text);
}

// What a view shows for a queue the API does not know: the API's message and a way back, nothing to act on.
function missing(root, error, what) {
  refill(root, 
    pageHead("Not found"),
    h("div", { class: "panel", id: "not-found" }, h("p", { class: "error" }, `${what}: ${failure(error)}`), h("p", {}, h("a", { href: link.queues() }, "Back to the queues"))),
  );
  root.setAttribute("data-loaded", "true");
}

function figuresList(stats, dlqHref) {
  if (!stats) return h("ul", { class: "figures", "aria-label": "Figures", "aria-busy": "true" }, h("li", { class: "loading" }, "Reading the figures…"));
  if (stats.error) return h("p", { class: "error" }, failure(stats.error));
  const tile = (value, text, href) => h("li", {}, h("strong", {}, value), href ? h("a", { href }, text) : h("span", {}, text));
  return h(
    "ul",
    { class: "figures", "aria-label": "Figures" },
    tile(stats.visible, "visible"),
    tile(stats.in_flight, "in flight"),
    tile(stats.delayed, "delayed"),
    tile(stats.dlq, "in the DLQ", dlqHref),
    tile(age(stats.oldest_age_seconds), "oldest"),
    stats.approximate ? h("li", {}, "at least (counting stopped at its limit)") : null,
  );
}

function input(id, labelText, attrs) {
  return h("div", {}, h("label", { for: id }, labelText), h("input", { id, name: id, ...attrs }));
}

// Every destructive action asks first, in a modal dialog: the keyboard stays in it (Escape goes back), the safe
// answer has the focus, and the question names what will be lost. `typed`: a word to type before it may go on.
// Resolves true when the operator confirmed.
function confirmAction({ title, text, confirm, typed }) {
  return new Promise((resolve) => {
    const opener = document.activeElement;
    let confirmed = false;
    const back = h("button", { type: "button", class: "secondary", id: "dialog-back" }, "Go back");
    const yes = h("button", { type: "submit", class: "danger", id: "dialog-confirm", disabled: Boolean(typed) }, confirm);
    const field = typed ? h("input", { id: "dialog-typed", autocomplete: "off", spellcheck: "false" }) : null;
    const form = h(
      "form",
      {},
      h("h2", { id: "dialog-title" }, title),
      h("p", { id: "dialog-text" }, text),
      typed ? h("div", {}, h("label", { for: "dialog-typed" }, `Type ${typed} to confirm`), field) : null,
      h("div", { class: "actions" }, back, yes),
    );
    const dialog = h("dialog", { class: "confirm", "aria-labelledby": "dialog-title", "aria-describedby": "dialog-text" }, form);
    if (field) field.addEventListener("input", () => (yes.disabled = field.value !== typed));
    back.addEventListener("click", () => dialog.close());
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (typed && field.value !== typed) return;
      confirmed = true;
      dialog.close();
    });
    dialog.addEventListener("close", () => {
      dialog.remove();
      state.dialogs -= 1;
      if (opener && opener.isConnected) opener.focus();
      resolve(confirmed);
    });
    state.dialogs += 1;
    document.body.append(dialog);
    dialog.showModal();
    (field || back).focus();
  });
}

function statsRow(stats) {
  if (!stats) return [1, 2, 3, 4, 5].map(() => h("td", { class: "num loading", "aria-label": "loading" }, "…"));
  if (stats.error) return [h("td", { class: "error", colspan: 5 }, failure(stats.error))];
  return [
    h("td", { class: "num" }, stats.visible),
    h("td", { class: "num" }, stats.in_flight),
    h("td", { class: "num" }, stats.delayed),
    h("td", { class: "num" }, stats.dlq),
    h("td", { class: "num" }, age(stats.oldest_age_seconds)),
  ];
}

// A message id on one line, whole: ids are copied and compared, never read in halves.
function idLink(href, id) {
  return h("a", { href, class: "id", title: id }, id);
}

// The send form of a queue's page (`client` null: the form asks which client) and of a client's own page. It knows
// the queue: a FIFO queue asks for a group and never a priority, a standard one the other way round; a delay past
// the queue's retention less the delivery window is refused here with the limit that applies. A message sent clears
// the form, so a second click sends nothing twice by mistake.
function sendPanel(described, client, clients, onSent) {
  const queue = described.name;
  const fifo = Boolean(described.fifo);
  const latest = Math.max(0, described.retention_seconds - DELIVERY_WINDOW_SECONDS);
  const result = h("p", { id: "send-result", role: "status" });
  const choices = h("datalist", { id: "send-clients" }, clients.map((name) => h("option", { value: name })));
  const clientField = client
    ? null
    : h(
        "div",
        {},
        h("label", { for: "send-client" }, `Client: whose sub-queue gets it (a new name starts one; SQS's protocol sends to ${DEFAULT_CLIENT})`),
        h("input", { id: "send-client", list: "send-clients", required: true, autocomplete: "off", value: clients[0] || DEFAULT_CLIENT }),
        choices,
      );
  const dedupLabel = described.content_based_dedup ? "Dedup id (empty: the body's hash)" : "Dedup id (optional)";
  const form = h(
    "form",
    { id: "send", class: "stack" },
    clientField,
    h("div", {}, h("label", { for: "send-body" }, "Body"), h("textarea", { id: "send-body", rows: 4, required: true })),
    h(
      "div",
      { class: "grid" },
      fifo ? input("send-group", "Group id (required)", { autocomplete: "off", required: true }) : null,
      input("send-dedup", dedupLabel, { autocomplete: "off" }),
      fifo ? null : input("send-priority", "Priority (0-9, 9 first)", { type: "number", min: 0, max: 9 }),
      input("send-delay", `Delay (s, up to ${latest})`, { type: "number", min: 0 }),
      input("send-at", "Deliver at (ISO-8601 with a zone, or epoch seconds)", { autocomplete: "off" }),
    ),
    h("div", {}, h("label", { for: "send-attributes" }, 'Attributes, a JSON object: {"name": "value"}'), h("textarea", { id: "send-attributes", rows: 2 })),
    h("div", {}, h("label", { for: "send-types" }, 'Attribute types, a JSON object: {"name": "Number"} (String, Number or Binary)'), h("textarea", { id: "send-types", rows: 1 })),
    h("div", { class: "actions" }, h("button", { type: "submit" }, client ? "Send" : "Send to this client")),
    result,
  );
  const value = (id) => {
    const field = form.querySelector(id);
    return field ? field.value.trim() : "";
  };
  const refuse = (text) => {
    result.className = "error";
    result.textContent = text;
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const to = client || value("#send-client");
    const message = { body: form.querySelector("#send-body").value };
    try {
      for (const [id, field] of [["#send-attributes", "attributes"], ["#send-types", "attribute_types"]]) {
        if (value(id)) message[field] = JSON.parse(value(id));
      }
    } catch (error) {
      refuse("Attributes and their types are JSON objects: " + error.message);
      return;
    }
    for (const [id, field, numeric] of [["#send-group", "group_id"], ["#send-dedup", "dedup_id"], ["#send-priority", "priority", true], ["#send-delay", "delay_seconds", true], ["#send-at", "deliver_at"]]) {
      const raw = value(id);
      // Only deliver_at takes either a number (epoch seconds) or text; a group or dedup id of digits stays text.
      if (raw !== "") message[field] = numeric || (field === "deliver_at" && /^\d+$/.test(raw)) ? Number(raw) : raw;
    }
    if (message.delay_seconds > latest) {
      refuse(`Delay must be from 0 to ${latest} s: the queue's retention (${described.retention_seconds} s, ${duration(described.retention_seconds)}) less the ${DELIVERY_WINDOW_SECONDS} s in which a message stays deliverable`);
      return;
    }
    try {
      const answer = await api("POST", sub(queue, to) + "/messages", message);
      result.className = "ok";
      refill(result, 
        answer.duplicate ? `Duplicate of ${answer.message_id}: nothing sent` : "Sent ",
        answer.duplicate ? null : idLink(link.message(queue, to, answer.message_id), answer.message_id),
        client ? null : [" to ", h("a", { href: link.client(queue, to) }, to)],
      );
      if (!answer.duplicate) {
        for (const field of form.querySelectorAll("textarea, input:not(#send-client)")) field.value = "";
        form.querySelector("#send-body").focus();
      }
      await onSent(to);
    } catch (error) {
      refuse(failure(error));
    }
  });
  return form;
}
// ---- views ----------------------------------------------------------------------------------------------------

const COLUMNS = [
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

function queuesView(root, params) {
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

const UNITS = [["60", "minutes"], ["3600", "hours"], ["86400", "days"]];

// A length of time given in the unit a person thinks in (retention: days), sent in seconds.
function durationInput(id, labelText, amount, unit) {
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

function createView(root) {
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
const EDITABLE = [
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
function settingValue(described, key) {
  return key === "shards" && described.auto_shards ? "auto" : described[key];
}

function settingHint(described, key, seconds) {
  if (key === "shards") return described.auto_shards ? `now ${described.shards}` : "fixed";
  return seconds ? duration(described[key]) : "";
}

function settingsForm(queue, initial) {
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

function queueView(root, queue) {
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
    try {
      await api("DELETE", `/queues/${enc(queue)}`);
      notice(`Deleted queue ${queue} and its messages`, "ok", true);
      location.hash = link.queues();
    } catch (error) {
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
      if (error.status !== 404) throw error;
      gone = true;
      missing(root, error, `No queue named ${queue}`);
      return;
    }
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
function subQueueView(root, queue, client) {
  const base = sub(queue, client);
  const key = `${queue}/${client}`;
  const received = state.received.get(key) || new Map();
  state.received.set(key, received);
  const figures = h("div", {}, figuresList(null));
  const messages = h("div", {}, loading("Reading the messages…"));
  const body = h("div", { class: "columns" }, loading("Reading the queue…"));
  const stateFilter = h("select", { id: "state-filter" }, [["", "any state"], ["visible", "visible"], ["in_flight", "in flight"], ["delayed", "delayed"]].map(([v, t]) => h("option", { value: v }, t)));
  const priorityFilter = h("select", { id: "priority-filter" }, h("option", { value: "" }, "any priority"), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((p) => h("option", { value: p }, p)));
  const groupFilter = h("input", { id: "group-filter", type: "search", autocomplete: "off" });
  let listed = [];
  let described = null;
  let gone = false;
  // Pages of the API's browse: `cursor` is the shown page's, `earlier` the cursors of the pages before it.
  let cursor = null;
  let nextCursor = null;
  const earlier = [];
  const pager = h("div", { class: "toolbar", id: "messages-pager" });
  const firstPage = () => {
    cursor = null;
    earlier.length = 0;
    refresh().catch((error) => notice(failure(error), "error"));
  };
  // A pick of a list fires `change` whatever made it (a person, the keyboard, a driver); `input` not always.
  stateFilter.addEventListener("change", firstPage);
  priorityFilter.addEventListener("change", firstPage);
  groupFilter.addEventListener("change", firstPage);
  append(root, [crumbs(["Queues", link.queues()], [queue, link.queue(queue)], [client]), pageHead(`${queue} / ${client}`), figures, body]);

  const lookup = h("form", { class: "toolbar", id: "lookup" });
  append(lookup, [input("lookup-id", "Open a message by id, in any state", { required: true, autocomplete: "off" }), h("button", { type: "submit", class: "secondary" }, "Open")]);
  lookup.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = link.message(queue, client, lookup.querySelector("#lookup-id").value.trim());
  });

  const lookArea = h("div", { id: "looked" });
  const lookForm = h(
    "form",
    { id: "look", class: "toolbar" },
    input("look-count", "How many (1-10)", { type: "number", min: 1, max: 10, value: 1 }),
    input("look-visibility", "Hidden for (s)", { type: "number", min: 0, value: 30 }),
    h("button", { type: "submit" }, "Receive to look"),
  );
  lookForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const seconds = Number(lookForm.querySelector("#look-visibility").value);
      const answer = await api("POST", base + "/receive", {
        max_messages: Number(lookForm.querySelector("#look-count").value),
        visibility_timeout: seconds,
      });
      for (const message of answer.messages) received.set(message.message_id, { ...message, until: Date.now() + seconds * 1000 });
      notice(`Received ${answer.messages.length} message(s); each stays hidden until you delete or release it, or ${seconds} s pass`, "ok");
      renderLooked();
      await refresh();
    } catch (error) {
      notice(failure(error), "error");
    }
  });

  async function settle(message, action) {
    if (action === "delete") {
      const sure = await confirmAction({
        title: "Delete this message?",
        text: `${message.message_id} is removed as a consumer that processed it would remove it: it is never delivered again. This cannot be undone.`,
        confirm: "Delete the message",
      });
      if (!sure) return;
    }
    try {
      if (action === "delete") await api("POST", base + "/delete", { receipt_handles: [message.receipt_handle] });
      else await api("POST", base + "/release", { receipt_handle: message.receipt_handle, delay_seconds: 0 });
      received.delete(message.message_id);
      notice(action === "delete" ? `Deleted ${message.message_id}` : `Released ${message.message_id}: visible again`, "ok");
      renderLooked();
      await refresh();
    } catch (error) {
      notice(failure(error), "error");
    }
  }

  function renderLooked() {
    clear(lookArea);
    for (const message of received.values()) {
      lookArea.append(
        h(
          "div",
          { class: "received", "data-message": message.message_id },
          h("p", {}, idLink(link.message(queue, client, message.message_id), message.message_id)),
          h("p", { class: "muted" }, `receive ${message.receive_count} · hidden until ${whenShort(message.until)}`),
          h("p", { class: "preview" }, preview(message.body, 200)),
          h(
            "div",
            { class: "actions" },
            h("button", { type: "button", class: "secondary", "data-action": "release", onclick: () => settle(message, "release") }, "Release"),
            h("button", { type: "button", class: "danger", "data-action": "delete", onclick: () => settle(message, "delete") }, "Delete…"),
          ),
        ),
      );
    }
  }

  async function purge() {
    const sure = await confirmAction({
      title: `Purge ${queue} / ${client}?`,
      text: "Every waiting and in-flight message of this client's sub-queue is removed; its DLQ stays. This cannot be undone.",
      confirm: "Purge",
    });
    if (!sure) return;
    try {
      const answer = await api("DELETE", base + "/messages");
      received.clear();
      renderLooked();
      notice(`Purged ${answer.purged} messages from ${queue}/${client}`, "ok");
      await refresh();
    } catch (error) {
      notice(failure(error), "error");
    }
  }

  function build() {
    const fifo = Boolean(described.fifo);
    append(root.querySelector("#page-actions"), [
      h("span", { class: "badge" }, fifo ? "FIFO" : "Standard"),
      h("a", { class: "button secondary", href: link.dlq(queue, client), id: "dlq-link" }, "Dead-letter queue"),
      h("a", { class: "button secondary", href: link.clientCharts(queue, client) }, "Charts"),
      h("button", { type: "button", class: "danger", id: "purge", onclick: purge }, "Purge…"),
    ]);
    refill(body, 
      h(
        "section",
        { class: "panel main-column", "aria-labelledby": "messages-title" },
        h("h2", { id: "messages-title" }, "Messages"),
        h(
          "div",
          { class: "toolbar" },
          h("div", {}, h("label", { for: "state-filter" }, "State"), stateFilter),
          fifo ? h("div", {}, h("label", { for: "group-filter" }, "Group (Enter)"), groupFilter) : h("div", {}, h("label", { for: "priority-filter" }, "Priority"), priorityFilter),
        ),
        messages,
        pager,
        lookup,
      ),
      h(
        "div",
        { class: "side-column" },
        h("section", { class: "panel", "aria-labelledby": "send-title" }, h("h2", { id: "send-title" }, "Send a message"), sendPanel(described, client, [], () => refresh())),
        h(
          "section",
          { class: "panel", "aria-labelledby": "look-title" },
          h("h2", { id: "look-title" }, "Receive to look"),
          h("p", { class: "muted" }, "Receives messages as a consumer would: hidden from others until you delete or release each."),
          lookForm,
          lookArea,
        ),
      ),
    );
    renderLooked();
  }

  function renderMessages() {
    const now = Date.now();
    for (const [id, message] of received) if (message.until <= now) received.delete(id);
    const fifo = Boolean(described.fifo);
    // The API filtered the page; shown in receive order: highest priority first, then the oldest.
    const rows = [...listed].sort((a, b) => (b.priority || 0) - (a.priority || 0) || a.sent_at - b.sent_at || (a.sequence < b.sequence ? -1 : 1));
    const titles = ["Message id", "State", fifo ? "Group" : "Priority", "Receives", "Sent", "Body"];
    renderPager();
    refill(messages, 
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { id: "messages" },
          h("caption", {}, `Waiting messages in every state, ${PAGE_SIZE} a page`),
          h("thead", {}, h("tr", {}, titles.map((t, i) => h("th", { scope: "col", class: i === 3 || (!fifo && i === 2) ? "num" : null }, t)))),
          h(
            "tbody",
            {},
            rows.length
              ? rows.map((m) =>
                  h(
                    "tr",
                    { "data-message": m.message_id },
                    h("td", {}, idLink(link.message(queue, client, m.message_id), m.message_id)),
                    h("td", {}, stateText(m)),
                    fifo ? h("td", {}, m.group_id || "—") : h("td", { class: "num" }, m.priority || 0),
                    h("td", { class: "num" }, m.receive_count),
                    timeCell(m.sent_at),
                    h("td", { class: "preview" }, preview(m.body, 80)),
                  ),
                )
              : h("tr", {}, h("td", { colspan: titles.length, class: "muted" }, "No messages match.")),
          ),
        ),
      ),
    );
  }

  function renderPager() {
    const move = (to) => {
      if (to) {
        earlier.push(cursor);
        cursor = nextCursor;
      } else {
        cursor = earlier.pop() || null;
      }
      refresh().catch((error) => notice(failure(error), "error"));
    };
    refill(pager, 
      h("button", { type: "button", class: "secondary", id: "messages-previous", disabled: !earlier.length, onclick: () => move(false) }, "Previous page"),
      h("button", { type: "button", class: "secondary", id: "messages-next", disabled: !nextCursor, onclick: () => move(true) }, "Next page"),
      h(
        "span",
        { id: "messages-page", role: "status" },
        `Page ${earlier.length + 1}` + (nextCursor ? (listed.length < PAGE_SIZE ? ": a part of the sub-queue was read; more on the next page" : "") : ": the end of the sub-queue"),
      ),
    );
  }

  function browse() {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (stateFilter.value) query.set("state", stateFilter.value);
    if (!described.fifo && priorityFilter.value !== "") query.set("priority", priorityFilter.value);
    if (described.fifo && groupFilter.value.trim()) query.set("group", groupFilter.value.trim());
    if (cursor) query.set("cursor", cursor);
    return api("GET", `${base}/browse?${query.toString()}`);
  }

  async function refresh() {
    if (gone) return;
    if (described === null) {
      try {
        described = (await api("GET", `/queues/${enc(queue)}`)).queue;
      } catch (error) {
        if (error.status !== 404) throw error;
        gone = true;
        missing(root, error, `No queue named ${queue}`);
        return;
      }
      build();
    }
    const [stats, page] = await Promise.all([api("GET", base + "/stats"), browse()]);
    sample(key, stats);
    refill(figures, figuresList(stats, link.dlq(queue, client)));
    listed = page.messages;
    nextCursor = page.cursor;
    renderMessages();
    root.setAttribute("data-loaded", "true");
  }

  return { refresh };
}

function messageView(root, queue, client, id) {
  const base = `${sub(queue, client)}/messages/${enc(id)}`;
  const detail = h("div", { class: "columns narrow-first" }, loading("Reading the message…"));
  append(root, [
    crumbs(["Queues", link.queues()], [queue, link.queue(queue)], [client, link.client(queue, client)], ["Message"]),
    h("div", { class: "page-head" }, h("h1", {}, "Message ", h("span", { class: "id" }, id)), h("div", { class: "actions", id: "page-actions" })),
    detail,
  ]);
  const actions = root.querySelector("#page-actions");

  async function act(question, method, path, done) {
    if (!(await confirmAction(question))) return;
    try {
      await api(method, path);
      notice(done, "ok");
      await refresh();
    } catch (error) {
      notice(failure(error), "error");
    }
  }

  function showActions(message) {
    clear(actions);
    if (message.state === "dlq") {
      actions.append(h("a", { class: "button secondary", href: link.dlq(queue, client), id: "to-dlq" }, "In the DLQ: redrive it there"));
      return;
    }
    actions.append(
      h(
        "button",
        {
          type: "button",
          class: "secondary",
          id: "move-to-dlq",
          onclick: () =>
            act(
              { title: "Move this message to the DLQ?", text: `${id} stops being delivered to consumers until it is redriven from the dead-letter queue.`, confirm: "Move to the DLQ" },
              "POST",
              base + "/dlq",
              `Moved ${id} to the DLQ`,
            ),
        },
        "Move to the DLQ…",
      ),
      h(
        "button",
        {
          type: "button",
          class: "danger",
          id: "delete-message",
          onclick: () =>
            act(
              { title: "Delete this message?", text: `${id} is removed before any consumer receives it again. This cannot be undone.`, confirm: "Delete the message" },
              "DELETE",
              base,
              `Deleted ${id}`,
            ),
        },
        "Delete the message…",
      ),
    );
  }

  async function refresh() {
    let message;
    try {
      message = await api("GET", base);
    } catch (error) {
      refill(detail, h("p", { class: "error", id: "message-error" }, failure(error)));
      clear(actions);
      root.setAttribute("data-loaded", "true");
      return;
    }
    const body = prettyBody(message.body);
    const types = message.attribute_types || {};
    const attributes = Object.entries(message.attributes || {});
    const copied = h("span", { role: "status" });
    refill(detail, 
      h(
        "section",
        { class: "panel side-column", "aria-labelledby": "detail-title" },
        h("h2", { id: "detail-title" }, "Details"),
        h(
          "dl",
          { class: "detail" },
          [
            ["State", stateText(message)],
            ["Receive count", message.receive_count],
            ["Sent", when(message.sent_at)],
            ["First received", when(message.first_received_at)],
            ["Delivery time", message.state === "dlq" ? "—" : when(message.visible_at)],
            ["Expires", when(message.expires_at)],
            message.group_id ? ["Group", message.group_id] : ["Priority", message.priority || 0],
            ["Dedup id", message.dedup_id || "—"],
            ["Sequence", message.sequence],
            ["Body stored", { item: "in the item, as sent", compressed: "in the item, compressed", s3: "in S3 (too large for an item)" }[message.body_stored] || "—"],
            ["Moved to the DLQ", when(message.moved_at)],
          ].map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]),
        ),
        h("h2", {}, "Attributes"),
        attributes.length
          ? h(
              "table",
              { id: "attributes" },
              h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Type"), h("th", { scope: "col" }, "Value"))),
              h("tbody", {}, attributes.map(([name, value]) => h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, types[name] || "String"), h("td", { class: "mono" }, value)))),
            )
          : h("p", { class: "muted" }, "None."),
      ),
      h(
        "section",
        { class: "panel main-column", "aria-labelledby": "body-title" },
        h(
          "div",
          { class: "page-head" },
          h("h2", { id: "body-title" }, body.json ? "Body (JSON, pretty-printed)" : "Body"),
          h(
            "div",
            { class: "actions" },
            copied,
            h("button", {
              type: "button",
              class: "secondary",
              onclick: async () => {
                try {
                  await navigator.clipboard.writeText(message.body);
                  copied.textContent = "copied";
                } catch (error) {
                  copied.textContent = "the browser refused the clipboard";
                }
              },
            }, "Copy the body"),
          ),
        ),
        h("pre", { class: "body", id: "body", tabindex: 0, "aria-label": "Body" }, body.text),
      ),
    );
    showActions(message);
    root.setAttribute("data-loaded", "true");
  }
  return { refresh, once: true };
}

function dlqView(root, queue, client) {
  const base = sub(queue, client);
  const list = h("div", {}, loading("Reading the dead letters…"));
  const result = h("p", { id: "redrive-result", role: "status" });
  const selected = new Set();
  const countInput = h("input", { id: "redrive-count", type: "number", min: 1, value: 1 });

  async function redrive(request, what) {
    try {
      const answer = await api("POST", base + "/dlq/redrive", request);
      result.className = "ok";
      result.textContent = `Redrove ${answer.redriven} message(s) (${what})`;
      selected.clear();
      await refresh();
    } catch (error) {
      result.className = "error";
      result.textContent = failure(error);
    }
  }

  append(
    root,
    [crumbs(["Queues", link.queues()], [queue, link.queue(queue)], [client, link.client(queue, client)], ["DLQ"]),
    pageHead(`Dead-letter queue of ${queue} / ${client}`, [
      h("button", { type: "button", id: "redrive-all", onclick: () => redrive({ max_messages: null, message_ids: null }, "all") }, "Redrive all"),
    ]),
    h(
      "div",
      { class: "toolbar" },
      h("button", { type: "button", class: "secondary", id: "redrive-selected", onclick: () => redrive({ max_messages: null, message_ids: [...selected] }, "selected") }, "Redrive the selected"),
      h("div", {}, h("label", { for: "redrive-count" }, "Oldest"), countInput),
      h("button", { type: "button", class: "secondary", id: "redrive-oldest", onclick: () => redrive({ max_messages: Number(countInput.value), message_ids: null }, "the oldest") }, "Redrive the oldest"),
    ),
    result,
    list],
  );

  async function refresh() {
    const answer = await api("GET", base + "/dlq?limit=100");
    refill(list, 
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { id: "dlq" },
          h("caption", {}, "Messages moved here after too many receives, or by an operator; a redrive puts them back in the sub-queue"),
          h("thead", {}, h("tr", {}, ["Select", "Message id", "Receives", "Moved", "Sent", "Body"].map((t) => h("th", { scope: "col" }, t)))),
          h(
            "tbody",
            {},
            answer.messages.length
              ? answer.messages.map((m) => {
                  const box = h("input", { type: "checkbox", id: "pick-" + m.message_id, "aria-label": "Select " + m.message_id, checked: selected.has(m.message_id) });
                  box.addEventListener("change", () => (box.checked ? selected.add(m.message_id) : selected.delete(m.message_id)));
                  return h(
                    "tr",
                    { "data-message": m.message_id },
                    h("td", {}, box),
                    h("td", {}, idLink(link.message(queue, client, m.message_id), m.message_id)),
                    h("td", { class: "num" }, m.receive_count),
                    timeCell(m.moved_at),
                    timeCell(m.sent_at),
                    h("td", { class: "preview" }, preview(m.body, 80)),
                  );
                })
              : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "The DLQ is empty.")),
          ),
        ),
      ),
    );
    root.setAttribute("data-loaded", "true");
  }
  return { refresh };
}

const CLOUD_MINUTES = 60;
const CLOUD_EVERY_MS = 60000;
const CLOUD_KEYS = { visible: "visible", in_flight: "in_flight", delayed: "delayed", dlq: "dlq", oldest_age_seconds: "oldest", shards: "shards" };

function cloudPoints(series) {
  const byTime = new Map();
  for (const [key, name] of Object.entries(CLOUD_KEYS)) {
    for (const [stamp, value] of series[key] || []) {
      const point = byTime.get(stamp) || { t: stamp * 1000 };
      point[name] = value;
      byTime.set(stamp, point);
    }
  }
  return [...byTime.values()].sort((a, b) => a.t - b.t);
}

function cloudSection(found) {
  if (found.source !== "cloudwatch") {
    return [
      h("p", { id: "metrics-source" }, `Not read from CloudWatch: ${found.reason}. The charts below are this page's own samples.`),
    ];
  }
  const points = cloudPoints(found.series);
  const clients = found.clients
    ? `, the sum of ${found.clients.length} client(s)${found.more_clients ? " (the first by name: there are more)" : ""}`
    : "";
  const minutes = Math.round((found.end - found.start) / 60);
  return [
    h(
      "p",
      { id: "metrics-source" },
      `From CloudWatch: ${found.namespace} in ${found.region}, the ${found.statistic} of each ${found.period / 60} min over the last ${minutes} min${clients}.`,
    ),
    points.length ? null : h("p", {}, "No point in this window: the sweeper publishes on its schedule."),
    h("h3", {}, "Backlog"),
    legend(SERIES),
    lineChart("Backlog from CloudWatch", points, SERIES, "points"),
    h("h3", {}, "Oldest message's age (s)"),
    lineChart("Oldest age in seconds from CloudWatch", points, ["oldest"], "points"),
    found.series.shards ? [h("h3", {}, "Shards"), lineChart("Shards from CloudWatch", points, ["shards"], "points")] : null,
  ];
}

function chartsView(root, queue, client) {
  const key = client ? `${queue}/${client}` : queue;
  const cloud = h("section", { id: "cloudwatch", "aria-labelledby": "cloudwatch-title" });
  const area = h("section", { id: "sampled", "aria-labelledby": "sampled-title" });
  const title = client ? `${queue} / ${client}` : queue;
  let cloudAt = 0;
  append(
    root,
    [client
      ? crumbs(["Queues", link.queues()], [queue, link.queue(queue)], [client, link.client(queue, client)], ["Charts"])
      : crumbs(["Queues", link.queues()], [queue, link.queue(queue)], ["Charts"]),
    h("h1", {}, `Charts of ${title}`),
    h("h2", { id: "cloudwatch-title" }, "Published to CloudWatch"),
    cloud,
    h("h2", { id: "sampled-title" }, "Sampled by this page"),
    h("p", { class: "muted" }, `Sampled every ${REFRESH_MS / 1000} s while the console is open (not while paused).`),
    area],
  );

  async function refreshCloud() {
    // At most once a minute: CloudWatch holds a point a minute, and each read is a GetMetricData.
    if (Date.now() - cloudAt < CLOUD_EVERY_MS) return;
    const query = new URLSearchParams({ queue, minutes: String(CLOUD_MINUTES) });
    if (client) query.set("client", client);
    const found = await api("GET", "/metrics?" + query.toString());
    cloudAt = Date.now();
    clear(cloud);
    append(cloud, cloudSection(found));
  }

  async function refresh() {
    const stats = client ? await api("GET", sub(queue, client) + "/stats") : (await api("GET", `/queues/${enc(queue)}`)).queue.stats;
    sample(key, stats);
    const points = state.samples.get(key) || [];
    refill(area, 
      h("h3", {}, "Backlog"),
      legend(SERIES),
      lineChart("Backlog", points, SERIES),
      h("h3", {}, "Oldest message's age (s)"),
      lineChart("Oldest age in seconds", points, ["oldest"]),
    );
    await refreshCloud();
    root.setAttribute("data-loaded", "true");
  }
  return { refresh };
}

// ---- router ---------------------------------------------------------------------------------------------------

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, search] = hash.split("?");
  let parts;
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch (error) {
    return null; // a malformed escape in a typed or pasted address: not found, not a blank page
  }
  const params = new URLSearchParams(search || "");
  if (parts.length === 0) return ["queues", (root) => queuesView(root, params)];
  if (parts[0] === "create" && parts.length === 1) return ["create", (root) => createView(root)];
  if (parts[0] !== "q" || parts.length < 2) return null;
  const [, queue, third, client, fifth, id] = parts;
  if (parts.length === 2) return ["queue", (root) => queueView(root, queue)];
  if (parts.length === 3 && third === "charts") return ["queue-charts", (root) => chartsView(root, queue, null)];
  if (third !== "c" || !client) return null;
  if (parts.length === 4) return ["client", (root) => subQueueView(root, queue, client)];
  if (parts.length === 5 && fifth === "dlq") return ["dlq", (root) => dlqView(root, queue, client)];
  if (parts.length === 5 && fifth === "charts") return ["client-charts", (root) => chartsView(root, queue, client)];
  if (parts.length === 6 && fifth === "m") return ["message", (root) => messageView(root, queue, client, id)];
  return null;
}

// How long a refresh may take before the header says it is still reading.
const SLOW_MS = 400;

async function tick(view) {
  // A slow answer is not asked again over itself: the next tick after it ends asks.
  if (!view.refresh || state.view !== view || view.busy) return;
  view.busy = true;
  // A view's first read is said at once; a refresh only once it is slow.
  if (!view.read) status("Loading…", "busy");
  const slow = setTimeout(() => {
    if (state.view === view && view.read) status("Refreshing…", "busy");
  }, SLOW_MS);
  try {
    await view.refresh();
    view.read = true;
    if (state.view === view) status(`Updated ${new Date().toLocaleTimeString()}` + (state.paused ? " · paused" : ""), "fresh");
  } catch (error) {
    if (state.view === view) {
      const again = state.paused ? "paused" : `trying again every ${REFRESH_MS / 1000} s`;
      status(error.status === 0 ? `Not answering: ${again}` : `Refresh failed: ${again}`, "failing");
      notice(failure(error), "error");
      view.root.setAttribute("data-loaded", "true");
    }
  } finally {
    clearTimeout(slow);
    view.busy = false;
  }
}

function show() {
  // Each view renders into its own element: an answer that arrives for a view already left changes nothing seen.
  const main = clear(document.getElementById("view"));
  const found = route();
  const root = h("div", { "data-view": found ? found[0] : "missing" });
  main.append(root);
  if (!found) {
    append(root, [h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Back to the queues"))]);
    root.setAttribute("data-loaded", "true");
    state.view = null;
    status("", "");
    return;
  }
  const view = { root, ...found[1](root) };
  state.view = view;
  if (!view.refresh) status("", "");
  const heading = root.querySelector("h1");
  document.title = heading ? `${heading.textContent} · dq console` : "dq console";
  main.focus();
  tick(view);
}

function start() {
  state.secret = takeSecret();
  const pause = document.getElementById("pause");
  pause.addEventListener("click", () => {
    state.paused = !state.paused;
    pause.setAttribute("aria-pressed", String(state.paused));
    pause.textContent = state.paused ? "Resume refresh" : "Pause refresh";
    const line = document.getElementById("status");
    if (state.paused && line.className === "status fresh") line.textContent += " · paused";
    if (!state.paused) line.textContent = line.textContent.replace(" · paused", "");
  });
  api("GET", "/info")
    .then((info) => {
      document.getElementById("target").textContent = "API: " + info.target;
    })
    .catch((error) => notice(failure(error), "error"));
  window.addEventListener("hashchange", () => {
    // A notice is about the view it was given on, unless the action that gave it opened this one.
    if (!state.carry) notice("");
    state.carry = false;
    show();
  });
  state.timer = setInterval(() => {
    if (!state.paused && !state.dialogs && state.view && !state.view.once && !document.hidden) tick(state.view);
  }, REFRESH_MS);
  show();
}

document.addEventListener("DOMContentLoaded", start);
