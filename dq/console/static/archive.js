// A sub-queue's archive of acknowledged messages (a queue with archive_days), and its replays.
import { PAGE_SIZE, h, append, refill, notice, api, enc, sub, link, failure, timeCell, preview } from "./core.js";
import { crumbs, pageHead, loading, input, confirmAction, attemptsTable, cursorPager, queueOnce, pickBox } from "./pieces.js";

// How long one request runs a replay; the page asks again while it runs (the console takes at most 5 s a request).
export const REPLAY_RUN_SECONDS = 2;
export const DEFAULT_RATE = 100;

// A time as the send form and `dq` take it: epoch seconds, or ISO-8601 with a zone; null when empty.
export function epochMs(text) {
  const raw = text.trim();
  if (!raw) return null;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1000);
  const parsed = Date.parse(raw);
  if (!/(Z|[+-]\d\d:?\d\d)$/i.test(raw) || Number.isNaN(parsed)) throw new Error(`not a time: ${raw} (epoch seconds or ISO-8601 with a zone, for example Z or +02:00)`);
  return parsed;
}

// One replay in a line, as `dq archive replay status` prints it: its state and counts, and how far it got.
export function replayLine(replay) {
  let line = `${replay.state}, ${replay.replayed} replayed, ${replay.skipped} skipped, ${replay.failed} failed`;
  if (replay.source === "dlq") line += " from the DLQ";
  if (replay.total !== null && replay.total !== undefined) line += ` of ${replay.total} ids`;
  if (replay.last_error) line += ` (last error: ${replay.last_error})`;
  return line;
}

export function archiveView(root, queue, client) {
  const base = sub(queue, client);
  const body = h("div", {}, loading("Reading the queue…"));
  const list = h("div", {}, loading("Reading the archive…"));
  const replays = h("div", { id: "replays" }, loading("Reading the replays…"));
  const looked = h("div", { id: "archived" });
  const pages = cursorPager("archive", "range", () => refresh());
  const selected = new Set();
  // Replays this page runs on, a call at a time, while it is open (as `dq archive replay` runs one to its end).
  const driving = new Set();
  let described = null;
  const readQueue = queueOnce(root, queue, (found) => {
    described = found;
    build();
  });
  let range = { since: null, until: null };
  append(root, [
    crumbs(["Queues", link.queues()], [queue, link.queue(queue)], [client, link.client(queue, client)], ["Archive"]),
    pageHead(`Archive of ${queue} / ${client}`, [h("a", { class: "button secondary", href: link.client(queue, client) }, "The sub-queue")]),
    body,
  ]);

  const rangeForm = h(
    "form",
    { id: "archive-range", class: "toolbar" },
    input("archive-since", "Acknowledged from (ISO-8601 with a zone, or epoch seconds)", { autocomplete: "off" }),
    input("archive-until", "Until (empty: now)", { autocomplete: "off" }),
    h("button", { type: "submit", class: "secondary" }, "Show"),
  );
  rangeForm.addEventListener("submit", (event) => {
    event.preventDefault();
    try {
      range = { since: epochMs(rangeForm.querySelector("#archive-since").value), until: epochMs(rangeForm.querySelector("#archive-until").value) };
    } catch (error) {
      notice(error.message, "error");
      return;
    }
    pages.reset();
    refresh().catch((error) => notice(failure(error), "error"));
  });

  const rateInput = h("input", { id: "replay-rate", type: "number", min: 1, max: 1000, value: DEFAULT_RATE, class: "short" });
  const replayResult = h("p", { id: "replay-result", role: "status" });
  const replayForm = h(
    "div",
    { class: "stack" },
    h("p", { class: "muted" }, "Sends archived messages back into this sub-queue as new messages carrying replayed_from; each archived copy at most once a replay."),
    h("div", {}, h("label", { for: "replay-rate" }, "Rate (new messages a second, 1-1000)"), rateInput),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", id: "replay-range", onclick: () => replay("range") }, "Replay the range…"),
      h("button", { type: "button", class: "secondary", id: "replay-selected", onclick: () => replay("selected") }, "Replay the selected…"),
    ),
    replayResult,
  );

  function rangeText() {
    const from = range.since === null ? "the start of the archive" : new Date(range.since).toLocaleString();
    const to = range.until === null ? "now" : new Date(range.until).toLocaleString();
    return `acknowledged from ${from} to ${to}`;
  }

  async function replay(kind) {
    const rate = Number(rateInput.value);
    const ids = [...selected];
    if (kind === "selected" && !ids.length) {
      replayResult.className = "error";
      replayResult.textContent = "Select the messages to replay first.";
      return;
    }
    const what = kind === "selected" ? `the ${ids.length} selected message(s)` : `every archived message ${rangeText()}`;
    const sure = await confirmAction({
      title: "Replay these messages?",
      text: `${what} of ${queue} / ${client} will be sent again as new messages, at most ${rate} a second: consumers receive and process them again.`,
      confirm: "Start the replay",
    });
    if (!sure) return;
    const request = kind === "selected" ? { message_ids: ids } : { since: range.since, until: range.until };
    try {
      const started = await api("POST", base + "/replays", { ...request, rate, run_seconds: 0 });
      replayResult.className = "ok";
      replayResult.textContent = `Started replay ${started.replay_id}`;
      selected.clear();
      drive(started.replay_id);
      await refresh();
    } catch (error) {
      replayResult.className = "error";
      replayResult.textContent = failure(error);
    }
  }

  // Runs the replay on while it runs and this page is open; a page left leaves it to resume.
  async function drive(replayId) {
    if (driving.has(replayId)) return;
    driving.add(replayId);
    try {
      let replay = { state: "running" };
      while (replay.state === "running" && root.isConnected && driving.has(replayId)) {
        replay = await api("POST", base + "/replays/run", { replay_id: replayId, seconds: REPLAY_RUN_SECONDS });
        await showReplays();
      }
    } catch (error) {
      notice(failure(error), "error");
    } finally {
      driving.delete(replayId);
      if (root.isConnected) await showReplays().catch(() => null);
    }
  }

  async function cancel(replay) {
    const sure = await confirmAction({
      title: "Cancel this replay?",
      text: `Replay ${replay.replay_id} stops: nothing more is sent and its counts (${replay.replayed} replayed so far) are final. It cannot be resumed.`,
      confirm: "Cancel the replay",
    });
    if (!sure) return;
    driving.delete(replay.replay_id);
    try {
      const answer = await api("POST", base + "/replays/cancel", { replay_id: replay.replay_id });
      notice(`Cancelled replay ${replay.replay_id}: ${replayLine(answer)}`, "ok");
      await showReplays();
    } catch (error) {
      notice(failure(error), "error");
    }
  }

  async function showReplays() {
    const answer = await api("GET", base + "/replays?limit=5");
    refill(replays, 
      answer.replays.length
        ? h(
            "table",
            { id: "replays-table" },
            h("caption", {}, "The latest replays of this sub-queue, newest first; this page runs on the ones it started or resumed while it is open"),
            h("thead", {}, h("tr", {}, ["Replay id", "Progress", "Rate", "Started", "Action"].map((t) => h("th", { scope: "col" }, t)))),
            h(
              "tbody",
              {},
              answer.replays.map((r) =>
                h(
                  "tr",
                  { "data-replay": r.replay_id, "data-state": r.state },
                  h("td", { class: "id" }, r.replay_id),
                  h("td", {}, replayLine(r)),
                  h("td", { class: "nowrap" }, `${r.rate}/s`),
                  timeCell(r.created_at),
                  h(
                    "td",
                    {},
                    r.state === "running" && !driving.has(r.replay_id) ? h("button", { type: "button", class: "secondary", "data-action": "resume", onclick: () => drive(r.replay_id) }, "Resume") : null,
                    r.state === "running" ? h("button", { type: "button", class: "danger", "data-action": "cancel", onclick: () => cancel(r) }, "Cancel…") : null,
                  ),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No replay yet."),
    );
  }

  async function look(id) {
    try {
      const answer = await api("GET", `${base}/archive/${enc(id)}`);
      refill(looked, 
        answer.messages.map((copy) =>
          h(
            "div",
            { class: "received", "data-archived": copy.message_id },
            h("p", { class: "id" }, copy.message_id),
            h("p", { class: "muted" }, `acknowledged ${new Date(copy.acked_at).toLocaleString()} · ${copy.receive_count} receive(s)`),
            h("pre", { class: "body", tabindex: 0, "aria-label": "Archived body" }, copy.body),
            attemptsTable(copy, "archived-attempts"),
          ),
        ),
      );
    } catch (error) {
      notice(failure(error), "error");
    }
  }

  function build() {
    if (!described.archive_days) {
      refill(body, 
        h(
          "section",
          { class: "panel", id: "no-archive" },
          h("p", {}, `${queue} keeps no archive: its archive_days is 0, so acknowledged messages are gone once acknowledged and there is nothing to list or replay.`),
          h("p", { class: "muted" }, "A queue created with archive_days from 1 to 90 keeps each acknowledged message that many days (dq queues update --archive-days)."),
        ),
      );
      return;
    }
    refill(body, 
      h(
        "div",
        { class: "columns" },
        h(
          "section",
          { class: "panel main-column", "aria-labelledby": "archive-title" },
          h("h2", { id: "archive-title" }, `Acknowledged messages, kept ${described.archive_days} day(s)`),
          rangeForm,
          list,
          pages.node,
        ),
        h(
          "div",
          { class: "side-column" },
          h("section", { class: "panel", "aria-labelledby": "replay-title" }, h("h2", { id: "replay-title" }, "Replay"), replayForm),
          h("section", { class: "panel", "aria-label": "Archived message" }, looked),
        ),
        h("section", { class: "panel wide", "aria-labelledby": "replays-title" }, h("h2", { id: "replays-title" }, "Replays"), h("div", { class: "scroll" }, replays)),
      ),
    );
  }

  function renderList(messages) {
    refill(list, 
      h(
        "div",
        { class: "scroll" },
        h(
          "table",
          { id: "archive" },
          h("caption", {}, `Messages ${rangeText()}, newest first, ${PAGE_SIZE} a page`),
          h("thead", {}, h("tr", {}, ["Select", "Message id", "Receives", "Acknowledged", "Last reason", "Body"].map((t) => h("th", { scope: "col", class: t === "Receives" ? "num" : null }, t)))),
          h(
            "tbody",
            {},
            messages.length
              ? messages.map((m) => {
                  return h(
                    "tr",
                    { "data-message": m.message_id },
                    h("td", {}, pickBox(selected, m.message_id)),
                    h("td", {}, h("button", { type: "button", class: "link id", title: "Show this archived message", onclick: () => look(m.message_id) }, m.message_id)),
                    h("td", { class: "num" }, m.receive_count),
                    timeCell(m.acked_at),
                    h("td", { class: "reason" }, m.last_reason ? preview(m.last_reason, 80) : "—"),
                    h("td", { class: "preview" }, preview(m.body, 80)),
                  );
                })
              : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "Nothing archived in this range.")),
          ),
        ),
      ),
    );
  }

  async function refresh() {
    if (!(await readQueue())) return;
    if (!described.archive_days) {
      root.setAttribute("data-loaded", "true");
      return;
    }
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (range.since !== null) query.set("since", String(range.since));
    if (range.until !== null) query.set("until", String(range.until));
    if (pages.cursor) query.set("cursor", pages.cursor);
    const [page] = await Promise.all([api("GET", `${base}/archive?${query.toString()}`), showReplays()]);
    pages.show(page.cursor, page.messages.length);
    renderList(page.messages);
    root.setAttribute("data-loaded", "true");
  }

  return { refresh };
}
