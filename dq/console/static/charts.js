// Samples the page takes while open, and the charts drawn from them or from what CloudWatch holds.
import { REFRESH_MS, MAX_SAMPLES, SERIES, SERIES_NAMES, state, h, append, svg, clear, refill, api, enc, sub, link } from "./core.js";
import { crumbs, pageHead } from "./pieces.js";

// ---- samples and charts ---------------------------------------------------------------------------------------

export function sample(key, stats) {
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
export function sparkline(key) {
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

export function lineChart(title, points, names, unit) {
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

export function legend(names) {
  return h("ul", { class: "legend" }, names.map((name) => h("li", { class: `s-${name}` }, SERIES_NAMES[name] || "Oldest age (s)")));
}


export const CLOUD_MINUTES = 60;
export const CLOUD_EVERY_MS = 60000;
export const CLOUD_KEYS = { visible: "visible", in_flight: "in_flight", delayed: "delayed", dlq: "dlq", oldest_age_seconds: "oldest", shards: "shards" };

export function cloudPoints(series) {
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

export function cloudSection(found) {
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

export function chartsView(root, queue, client) {
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
    pageHead(`Charts of ${title}`, [h("a", { class: "button secondary", href: client ? link.client(queue, client) : link.queue(queue) }, client ? "The sub-queue" : "The queue")]),
    h(
      "div",
      { class: "columns even" },
      h("div", { class: "panel" }, h("h2", { id: "cloudwatch-title" }, "Published to CloudWatch"), cloud),
      h(
        "div",
        { class: "panel" },
        h("h2", { id: "sampled-title" }, "Sampled by this page"),
        h("p", { class: "muted" }, `Sampled every ${REFRESH_MS / 1000} s while the console is open (not while paused).`),
        area,
      ),
    )],
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
