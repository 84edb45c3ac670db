// What several views share: headings, figures, the confirmation dialog, the send form.
import { DELIVERY_WINDOW_SECONDS, DEFAULT_CLIENT, PAGE_SIZE, state, h, refill, notice, api, enc, sub, link, failure, age, duration, when } from "./core.js";

// ---- shared pieces --------------------------------------------------------------------------------------------

export function crumbs(...parts) {
  return h(
    "nav",
    { class: "crumbs", "aria-label": "Breadcrumb" },
    parts.map(([text, href]) => (href ? h("a", { href }, text) : h("span", { "aria-current": "page" }, text))),
  );
}

// A view's title on the left and its actions on the right, where the eye looks for them on a console's page.
export function pageHead(title, actions) {
  return h("div", { class: "page-head" }, h("h1", {}, title), h("div", { class: "actions", id: "page-actions" }, actions || []));
}

export function loading(text) {
  return h("p", { class: "loading", role: "status" }, text);
}

// What a view shows for a queue the API does not know: the API's message and a way back, nothing to act on.
export function missing(root, error, what) {
  refill(root, 
    pageHead("Not found"),
    h("div", { class: "panel", id: "not-found" }, h("p", { class: "error" }, `${what}: ${failure(error)}`), h("p", {}, h("a", { href: link.queues() }, "Back to the queues"))),
  );
  root.setAttribute("data-loaded", "true");
}

// A view's queue, read on the view's first refresh, which then draws the view around it (`build`); each refresh
// after has it at once. Null when the API knows no such queue: the view says so, once, and reads nothing more.
export function queueOnce(root, queue, build) {
  let described = null;
  let gone = false;
  return async () => {
    if (gone) return null;
    if (described === null) {
      try {
        described = (await api("GET", `/queues/${enc(queue)}`)).queue;
      } catch (error) {
        if (error.status !== 404) throw error;
        gone = true;
        missing(root, error, `No queue named ${queue}`);
        return null;
      }
      build(described);
    }
    return described;
  };
}

export function figuresList(stats, dlqHref) {
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

export function input(id, labelText, attrs) {
  return h("div", {}, h("label", { for: id }, labelText), h("input", { id, name: id, ...attrs }));
}

// Every destructive action asks first, in a modal dialog: the keyboard stays in it (Escape goes back), the safe
// answer has the focus, and the question names what will be lost. `typed`: a word to type before it may go on.
// Resolves true when the operator confirmed.
export function confirmAction({ title, text, confirm, typed }) {
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

export function statsRow(stats) {
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

// The pages of a listing the API reads with a cursor (browse, the archive): `cursor` is the shown page's, `earlier`
// the cursors of the pages before it. `load` reads the page `cursor` names; `show` draws the buttons after it.
export function cursorPager(prefix, what, load) {
  const node = h("div", { class: "toolbar", id: `${prefix}-pager` });
  const pages = { node, cursor: null, next: null, earlier: [] };
  pages.reset = () => {
    pages.cursor = null;
    pages.earlier.length = 0;
  };
  const move = (forward) => {
    if (forward) {
      pages.earlier.push(pages.cursor);
      pages.cursor = pages.next;
    } else {
      pages.cursor = pages.earlier.pop() || null;
    }
    load().catch((error) => notice(failure(error), "error"));
  };
  pages.show = (next, count) => {
    pages.next = next;
    const more = next ? (count < PAGE_SIZE ? `: a part of the ${what} was read; more on the next page` : "") : `: the end of the ${what}`;
    refill(node, 
      h("button", { type: "button", class: "secondary", id: `${prefix}-previous`, disabled: !pages.earlier.length, onclick: () => move(false) }, "Previous page"),
      h("button", { type: "button", class: "secondary", id: `${prefix}-next`, disabled: !next, onclick: () => move(true) }, "Next page"),
      h("span", { id: `${prefix}-page`, role: "status" }, `Page ${pages.earlier.length + 1}${more}`),
    );
  };
  return pages;
}

// A row's tick box for a set of picked ids: the set, not the box, holds the pick, so a redrawn page keeps it.
export function pickBox(selected, id) {
  const box = h("input", { type: "checkbox", id: "pick-" + id, "aria-label": "Select " + id, checked: selected.has(id) });
  box.addEventListener("change", () => (box.checked ? selected.add(id) : selected.delete(id)));
  return box;
}

// A message id on one line, whole: ids are copied and compared, never read in halves.
export function idLink(href, id) {
  return h("a", { href, class: "id", title: id }, id);
}

// The send form of a queue's page (`client` null: the form asks which client) and of a client's own page. It knows
// the queue: a FIFO queue asks for a group and never a priority, a standard one the other way round; a delay past
// the queue's retention less the delivery window is refused here with the limit that applies. A message sent clears
// the form, so a second click sends nothing twice by mistake.
export function sendPanel(described, client, clients, onSent) {
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

// ---- failure reasons ------------------------------------------------------------------------------------------

export const OUTCOMES = { released: "released", failed: "failed", timed_out: "timed out", visibility_expired: "visibility expired" };

// A message's attempts that ended without an acknowledgement, oldest first, as `dq get` prints them: the number,
// how it ended, why (a traceback's further lines below its first), and when (a claim that ran out has no time).
export function attemptsTable(message, id) {
  const attempts = message.attempts || [];
  return [
    attempts.length
      ? h(
          "table",
          { id },
          h("caption", {}, "Its last attempts that ended without an acknowledgement, oldest first"),
          h("thead", {}, h("tr", {}, ["Attempt", "Outcome", "Reason", "Ended"].map((t) => h("th", { scope: "col", class: t === "Attempt" ? "num" : null }, t)))),
          h(
            "tbody",
            {},
            attempts.map((a) =>
              h(
                "tr",
                { "data-attempt": a.attempt },
                h("td", { class: "num" }, a.attempt),
                h("td", {}, OUTCOMES[a.outcome] || a.outcome),
                h("td", {}, h("span", { class: "reason" }, a.reason), a.detail ? h("pre", { class: "detail", tabindex: 0, "aria-label": `Attempt ${a.attempt}'s detail` }, a.detail) : null),
                h("td", { class: "nowrap" }, a.at ? when(a.at) : "claim ran out"),
              ),
            ),
          ),
        )
      : h("p", { class: "muted", id }, "No attempt has ended without an acknowledgement."),
    message.reasons_dropped ? h("p", { class: "muted" }, `Reasons dropped ${message.reasons_dropped} times to keep the body in its item.`) : null,
  ];
}
