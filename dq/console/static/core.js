// The console's ground: its state, the DOM built as text only, the secret, the API, and how figures read.

export const REFRESH_MS = 5000;
export const PAGE_SIZE = 50;
export const FIGURES_AT_ONCE = 10;
export const MAX_SAMPLES = 720;
export const SERIES = ["visible", "in_flight", "delayed", "dlq"];
export const SERIES_NAMES = { visible: "Visible", in_flight: "In flight", delayed: "Delayed", dlq: "DLQ" };

export const SECRET_KEY = "dq-console-secret";

// A message must stay deliverable this long within its retention: the longest delay is the retention less this.
export const DELIVERY_WINDOW_SECONDS = 60;
// The client SQS's protocol sends to when its URL names none: where a send from a queue's page goes by default.
export const DEFAULT_CLIENT = "default";

export const state = {
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

export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// The node's children replaced: null, false and nested lists skipped or flattened as `h` does.
export function refill(node, ...children) {
  return append(clear(node), children);
}

// A notice is about the view it was given on, and goes when the operator leaves it; `carry` keeps it over the one
// navigation the action itself makes (a queue created opens its page, a queue deleted the list).
export function notice(text, kind, carry) {
  state.carry = Boolean(carry);
  const box = document.getElementById("notice");
  box.textContent = text || "";
  box.className = "notice " + (kind || "");
}

// The header's line about the data on screen: loading, when it was last read, paused, or why it is not.
export function status(text, kind) {
  const line = document.getElementById("status");
  line.textContent = text;
  line.className = "status " + (kind || "");
}

// ---- the console's secret -------------------------------------------------------------------------------------

// The printed URL gives the secret in its fragment (`#token=…`), which the browser sends to no server. The page
// keeps it in this tab's sessionStorage, which pages of this origin alone read (another port of 127.0.0.1 is
// another origin) and which a reload keeps, and sends it in a header: never a cookie, which the browser would send
// to every server on 127.0.0.1 whatever its port.
export function takeSecret() {
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

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, body) {
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

export const enc = encodeURIComponent;
export const sub = (queue, client) => `/queues/${enc(queue)}/clients/${enc(client)}`;
export const link = {
  queues: () => "#/",
  queue: (q) => `#/q/${enc(q)}`,
  queueCharts: (q) => `#/q/${enc(q)}/charts`,
  client: (q, c) => `#/q/${enc(q)}/c/${enc(c)}`,
  clientCharts: (q, c) => `#/q/${enc(q)}/c/${enc(c)}/charts`,
  dlq: (q, c) => `#/q/${enc(q)}/c/${enc(c)}/dlq`,
  archive: (q, c) => `#/q/${enc(q)}/c/${enc(c)}/archive`,
  message: (q, c, id) => `#/q/${enc(q)}/c/${enc(c)}/m/${enc(id)}`,
};

export function failure(error) {
  return `${error.code || "Error"}: ${error.message}`;
}

// ---- formatting -----------------------------------------------------------------------------------------------

export function when(ms) {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toLocaleString();
}

// Today's times by the clock alone, in a table or a state where a whole date crowds out what matters.
export function whenShort(ms) {
  if (ms === null || ms === undefined) return "—";
  const date = new Date(ms);
  return date.toDateString() === new Date().toDateString() ? date.toLocaleTimeString() : date.toLocaleString();
}

// A table's time cell: how long ago, as `dq` prints it, with the date and time in its title.
export function timeCell(ms) {
  if (ms === null || ms === undefined) return h("td", {}, "—");
  const seconds = Math.round((Date.now() - ms) / 1000);
  return h("td", { class: "nowrap", title: when(ms) }, seconds >= 0 ? `${age(seconds)} ago` : `in ${age(-seconds)}`);
}

export function age(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

// As `dq` prints a setting: the largest unit that keeps the number whole (`45 s`, `12 min`, `4 d`).
export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}`;
  }
  return `${seconds} s`;
}

export function shardsText(queue) {
  // As `dq queues ls` prints them: an automatic queue's current count, marked.
  return queue.auto_shards ? `${queue.shards} auto` : String(queue.shards);
}

export function preview(text, length) {
  const flat = String(text).replace(/\s+/g, " ");
  return flat.length > length ? flat.slice(0, length) + "…" : flat;
}

export function stateText(message) {
  // `until` (a browsed message's) is when the state ends; a FIFO message's claim ends with its group's hold.
  const until = message.until ?? message.visible_at;
  if (message.state === "in_flight") return `in flight until ${whenShort(until)}`;
  if (message.state === "delayed") return `delayed until ${whenShort(until)}`;
  if (message.state === "dlq") return "in the DLQ";
  return "visible";
}

export function prettyBody(body) {
  try {
    const parsed = JSON.parse(body);
    if (parsed !== null && typeof parsed === "object") return { text: JSON.stringify(parsed, null, 2), json: true };
  } catch (error) {
    // not JSON: shown as it is
  }
  return { text: body, json: false };
}
