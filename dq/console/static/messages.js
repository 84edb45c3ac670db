// A client's sub-queue, one message, and the dead-letter queue.
import { PAGE_SIZE, state, h, append, clear, refill, notice, api, enc, sub, link, failure, when, whenShort, timeCell, preview, stateText, prettyBody } from "./core.js";
import { sample } from "./charts.js";
import { crumbs, pageHead, loading, figuresList, input, confirmAction, idLink, sendPanel, attemptsTable, cursorPager, queueOnce, pickBox } from "./pieces.js";
import { DEFAULT_RATE, REPLAY_RUN_SECONDS, replayLine } from "./archive.js";

export function subQueueView(root, queue, client) {
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
  const readQueue = queueOnce(root, queue, (found) => {
    described = found;
    build();
  });
  const pages = cursorPager("messages", "sub-queue", () => refresh());
  const firstPage = () => {
    pages.reset();
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
      h("a", { class: "button secondary", href: link.archive(queue, client), id: "archive-link" }, "Archive"),
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
        pages.node,
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

  function browse() {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (stateFilter.value) query.set("state", stateFilter.value);
    if (!described.fifo && priorityFilter.value !== "") query.set("priority", priorityFilter.value);
    if (described.fifo && groupFilter.value.trim()) query.set("group", groupFilter.value.trim());
    if (pages.cursor) query.set("cursor", pages.cursor);
    return api("GET", `${base}/browse?${query.toString()}`);
  }

  async function refresh() {
    if (!(await readQueue())) return;
    const [stats, page] = await Promise.all([api("GET", base + "/stats"), browse()]);
    sample(key, stats);
    refill(figures, figuresList(stats, link.dlq(queue, client)));
    listed = page.messages;
    pages.show(page.cursor, listed.length);
    renderMessages();
    root.setAttribute("data-loaded", "true");
  }

  return { refresh };
}

export function messageView(root, queue, client, id) {
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
            message.moved_reason ? ["Moved because", message.moved_reason] : null,
          ].filter(Boolean).map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]),
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
      h("section", { class: "panel wide", "aria-labelledby": "attempts-title" }, h("h2", { id: "attempts-title" }, "Attempts"), attemptsTable(message, "attempts")),
    );
    showActions(message);
    root.setAttribute("data-loaded", "true");
  }
  return { refresh, once: true };
}

export function dlqView(root, queue, client) {
  const base = sub(queue, client);
  const list = h("div", {}, loading("Reading the dead letters…"));
  const reasons = h("div", {}, loading("Reading the reasons…"));
  const result = h("p", { id: "redrive-result", role: "status" });
  const selected = new Set();
  const countInput = h("input", { id: "redrive-count", type: "number", min: 1, value: 1, class: "short" });

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

  // A reason's group redriven as `dq dlq redrive --reason` does: every dead letter whose last reason contains it.
  async function redriveReason(group, count) {
    const sure = await confirmAction({
      title: "Redrive these dead letters?",
      text: `Every dead letter of ${queue} / ${client} whose last reason contains "${group.reason}" (${count} now) goes back to the sub-queue with its receive count reset, to be delivered again.`,
      confirm: "Redrive them",
    });
    if (sure) await redrive({ max_messages: null, message_ids: null, reason: group.reason }, `last reason: ${group.reason}`);
  }

  // A reason's group replayed as `dq archive replay --from-dlq --reason` does: each dead letter sent again as a new
  // message carrying replayed_from, leaving the DLQ as it goes; run on by this page while it is open (the sweep
  // runs on a replay the page left).
  async function replayReason(group, count) {
    const sure = await confirmAction({
      title: "Replay these dead letters?",
      text: `Every dead letter of ${queue} / ${client} whose last reason contains "${group.reason}" (${count} now) is sent again as a new message carrying replayed_from, at most ${DEFAULT_RATE} a second, and leaves the DLQ.`,
      confirm: "Start the replay",
    });
    if (!sure) return;
    try {
      let replay = await api("POST", base + "/replays", { source: "dlq", reason: group.reason, rate: DEFAULT_RATE, run_seconds: 0 });
      const shown = () => {
        result.className = "ok";
        result.textContent = `Replay ${replay.replay_id} (last reason: ${group.reason}): ${replayLine(replay)}`;
      };
      shown();
      while (replay.state === "running" && root.isConnected) {
        replay = await api("POST", base + "/replays/run", { replay_id: replay.replay_id, seconds: REPLAY_RUN_SECONDS });
        shown();
      }
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
      h("a", { class: "button secondary", href: link.client(queue, client) }, "The sub-queue"),
      h("button", { type: "button", id: "redrive-all", onclick: () => redrive({ max_messages: null, message_ids: null }, "all") }, "Redrive all"),
    ]),
    h(
      "section",
      { class: "panel", "aria-label": "Dead letters" },
      h(
        "div",
        { class: "toolbar" },
        h("button", { type: "button", class: "secondary", id: "redrive-selected", onclick: () => redrive({ max_messages: null, message_ids: [...selected] }, "selected") }, "Redrive the selected"),
        h("div", {}, h("label", { for: "redrive-count" }, "Oldest"), countInput),
        h("button", { type: "button", class: "secondary", id: "redrive-oldest", onclick: () => redrive({ max_messages: Number(countInput.value), message_ids: null }, "the oldest") }, "Redrive the oldest"),
      ),
      result,
      list,
    ),
    h("section", { class: "panel", "aria-labelledby": "reasons-title" }, h("h2", { id: "reasons-title" }, "Reasons"), reasons)],
  );

  function renderReasons(answer) {
    const plus = answer.approximate ? "+" : "";
    const groups = answer.reasons || [];
    refill(reasons, 
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { id: "reasons" },
          h("caption", {}, "Why the dead letters failed: each distinct last reason, the most frequent first" + (plus ? " (the DLQ was longer than one read: counts are at least)" : "")),
          h("thead", {}, h("tr", {}, ["Count", "Last reason", "First seen", "Last seen", "Action"].map((t) => h("th", { scope: "col", class: t === "Count" ? "num" : null }, t)))),
          h(
            "tbody",
            {},
            groups.length
              ? groups.map((group, n) =>
                  h(
                    "tr",
                    { "data-reason": n },
                    h("td", { class: "num" }, `${group.count}${plus} ×`),
                    h("td", { class: "reason" }, group.reason),
                    timeCell(group.first_seen),
                    timeCell(group.last_seen),
                    h(
                      "td",
                      {},
                      h("button", { type: "button", class: "secondary", "data-action": "redrive-reason", onclick: () => redriveReason(group, `${group.count}${plus}`) }, "Redrive these…"),
                      h("button", { type: "button", class: "secondary", "data-action": "replay-reason", onclick: () => replayReason(group, `${group.count}${plus}`) }, "Replay these…"),
                    ),
                  ),
                )
              : h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No dead letter has a reason.")),
          ),
        ),
      ),
    );
  }

  async function refresh() {
    const [answer, grouped] = await Promise.all([api("GET", base + "/dlq?limit=100"), api("GET", base + "/dlq/reasons")]);
    renderReasons(grouped);
    refill(list, 
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { id: "dlq" },
          h("caption", {}, "Messages moved here after too many receives, or by an operator; a redrive puts them back in the sub-queue"),
          h("thead", {}, h("tr", {}, ["Select", "Message id", "Receives", "Moved", "Sent", "Last reason", "Body"].map((t) => h("th", { scope: "col", class: t === "Receives" ? "num" : null }, t)))),
          h(
            "tbody",
            {},
            answer.messages.length
              ? answer.messages.map((m) => {
                  return h(
                    "tr",
                    { "data-message": m.message_id },
                    h("td", {}, pickBox(selected, m.message_id)),
                    h("td", {}, idLink(link.message(queue, client, m.message_id), m.message_id)),
                    h("td", { class: "num" }, m.receive_count),
                    timeCell(m.moved_at),
                    timeCell(m.sent_at),
                    h("td", { class: "reason" }, m.last_reason ? preview(m.last_reason, 120) : "—"),
                    h("td", { class: "preview" }, preview(m.body, 80)),
                  );
                })
              : h("tr", {}, h("td", { colspan: 7, class: "muted" }, "The DLQ is empty.")),
          ),
        ),
      ),
    );
    root.setAttribute("data-loaded", "true");
  }
  return { refresh };
}
