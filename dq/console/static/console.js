// The dq console's page: a hash router over views of queues, clients, messages and dead letters.
// Every name and message is put on the page as text (textContent, text nodes, attribute values): nothing that the
// API returns is ever parsed as HTML. The console server signs and forwards the API calls; this script holds no AWS
// credential, only the console's own secret, which it sends to the console server alone.
// This module routes: each view comes from the module that holds it.
import { REFRESH_MS, state, h, append, clear, notice, status, takeSecret, api, failure } from "./core.js";
import { chartsView } from "./charts.js";
import { queuesView, createView, queueView } from "./queues.js";
import { subQueueView, messageView, dlqView } from "./messages.js";
import { archiveView } from "./archive.js";

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
  if (parts.length === 5 && fifth === "archive") return ["archive", (root) => archiveView(root, queue, client)];
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
