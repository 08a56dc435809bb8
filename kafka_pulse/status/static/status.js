// kafka-pulse status page: polls /api/status (schema kafka-pulse-status/1, docs/status-page.md) and renders it
// with DOM calls only (text is never parsed as HTML). No framework, no CDN: the page works offline.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const state = { doc: null, sortKey: "status", sortDir: -1, selected: null, selectedGroup: null, timer: null };
const SEVERITY = { UNKNOWN: 1, NOTFOUND: 0, OK: 2, WARN: 3, ERR: 4, STOP: 5, STALL: 6, REWIND: 7 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  return node;
}

function pct(ratio, digits) {
  return ratio === null || ratio === undefined ? "–" : (ratio * 100).toFixed(digits === undefined ? 2 : digits) + " %";
}

function ms(seconds) {
  return seconds === null || seconds === undefined ? "–" : (seconds * 1000).toFixed(1) + " ms";
}

function history(held, span) {
  return `${Math.floor((held || 0) / 60)} min of ${Math.round(span / 60)}`;
}

function latency(seconds, row) {
  // A quantile over less than its span says how much history it has, never an empty cell.
  if (!row || row.latency_span_s === undefined || row.latency_history_s >= row.latency_span_s) return ms(seconds);
  const held = history(row.latency_history_s, row.latency_span_s);
  return seconds === null || seconds === undefined ? held : `${ms(seconds)} (${held})`;
}

function secs(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 120) return seconds.toFixed(1) + " s";
  if (seconds < 7200) return (seconds / 60).toFixed(1) + " min";
  return (seconds / 3600).toFixed(1) + " h";
}

function here(path) {
  // Resolved against the origin, never the page's URL: a page opened with user:pass@ before its host would lend its
  // credentials to a relative one, and fetch() refuses URLs that carry credentials.
  return new URL(path, window.location.origin).href;
}

function badge(status) {
  return el("span", { class: "badge status-" + status }, status);
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function renderHeader(doc) {
  const verdict = document.getElementById("verdict");
  verdict.textContent = doc.status;
  verdict.className = "badge status-" + doc.status;
  const clusters = doc.clusters.map((c) => c.cluster).join(", ");
  document.getElementById("checked").textContent = doc.checked_at
    ? `checked ${doc.checked_at}` + (clusters ? ` · ${clusters}` : "")
    : "waiting for the first check…";
  const links = [];
  for (const dash of doc.links.grafana) links.push(el("a", { href: dash.url, rel: "noopener" }, dash.title));
  if (doc.links.burrow_api) links.push(el("a", { href: doc.links.burrow_api }, "Burrow API"));
  links.push(el("a", { href: doc.links.metrics }, "/metrics"));
  links.push(el("a", { href: "/api/status" }, "/api/status"));
  document.getElementById("links").replaceChildren(...links);
}

function renderChecks(doc) {
  const blocks = [];
  for (const cluster of doc.clusters) {
    const rows = cluster.checks.map((check) =>
      el(
        "tr",
        { "data-check": check.name, class: "row-" + check.status },
        el("td", {}, check.name),
        el("td", {}, badge(check.status)),
        el(
          "td",
          {},
          check.summary,
          check.reasons.length ? el("ul", { class: "reasons" }, ...check.reasons.map((r) => el("li", {}, r))) : null,
          check.name === "controller" ? voters(check.details) : null
        )
      )
    );
    blocks.push(
      el("h3", {}, `cluster ${cluster.cluster} `, badge(cluster.status)),
      el("table", { class: "checks" }, el("thead", {}, el("tr", {}, el("th", {}, "check"), el("th", {}, "status"), el("th", {}, "summary"))), el("tbody", {}, ...rows))
    );
  }
  const off = Object.entries(doc.off).map(([name, why]) => el("li", { class: "dim" }, `${name}: off (${why})`));
  if (off.length) blocks.push(el("ul", {}, ...off));
  document.getElementById("checks").replaceChildren(...blocks);
}

// Each KRaft voter's lag behind the leader, and the observers (a KIP-853 voter change moves a node between the
// two), from the check's DescribeQuorum (docs/check.md, "controller").
function voters(details) {
  const list = (details && details.voters) || [];
  if (!list.length) return null;
  const observers = details.observers || [];
  return el(
    "ul",
    { class: "voters dim" },
    ...list.map((v) =>
      el(
        "li",
        { "data-voter": v.node },
        `voter ${v.node}${v.node === details.leader ? " (leader, epoch " + details.epoch + ")" : ""}: ` +
          `${v.lag_records} records behind, caught up ` +
          (v.caught_up_age_s === null ? "never seen by this leader" : `${v.caught_up_age_s.toFixed(1)} s ago`)
      )
    ),
    ...(observers.length ? [el("li", { "data-observers": observers.join(",") }, `observers: ${observers.join(", ")}`)] : [])
  );
}

function renderBrokers(doc) {
  fill(
    document.querySelector("#brokers tbody"),
    doc.brokers.map((b) => {
      const canary = b.canary || {};
      const up = b.up === null ? el("span", { class: "dim" }, "?") : el("span", { class: b.up ? "up" : "down" }, b.up ? "up" : "DOWN");
      return el(
        "tr",
        { "data-broker": b.id, class: b.up === false ? "row-down" : null },
        el("td", {}, b.cluster),
        el("td", {}, b.id),
        el("td", {}, b.rack || "–"),
        el("td", {}, up),
        el("td", {}, pct(canary.availability)),
        el("td", {}, b.canary ? latency(canary.latency_p50_s, doc.canary_history) : ms(null)),
        el("td", {}, b.canary ? latency(canary.latency_p99_s, doc.canary_history) : ms(null)),
        el("td", {}, b.reason || "")
      );
    })
  );
  fill(
    document.querySelector("#azs tbody"),
    doc.azs.map((z) =>
      el(
        "tr",
        { "data-rack": z.rack || "" },
        el("td", {}, z.rack || "(no rack)"),
        el("td", {}, z.brokers.join(", ")),
        el("td", {}, `${z.brokers_up}/${z.brokers.length}`),
        el("td", {}, pct(z.availability)),
        el("td", {}, latency(z.latency_p50_s, doc.canary_history)),
        el("td", {}, latency(z.latency_p99_s, doc.canary_history))
      )
    )
  );
  const rows = [];
  const labels = { offline: "offline", under_min_isr: "under min ISR", under_replicated: "under-replicated" };
  for (const [kind, label] of Object.entries(labels)) {
    for (const p of doc.partitions[kind]) {
      rows.push(
        el(
          "tr",
          { class: kind === "under_replicated" ? "row-WARN" : "row-CRIT" },
          el("td", {}, kind === "under_min_isr" ? `${label}, ${elrText(p)}` : label),
          el("td", {}, p.cluster),
          el("td", {}, `${p.topic}-${p.partition}`),
          el("td", {}, p.leader < 0 ? "none" : p.leader),
          el("td", {}, p.replicas.join(", ")),
          el("td", {}, p.isr.join(", ")),
          el("td", {}, p.blame.map((b) => "broker " + b).join(", "))
        )
      );
    }
  }
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 7, class: "dim" }, "none")));
  fill(document.querySelector("#partitions tbody"), rows);
}

// What can recover a partition under min ISR (KIP-966), as `check` judges it: docs/check.md, "ELR".
function elrText(p) {
  switch (p.elr_verdict) {
    case "recoverable":
      return `recoverable through ELR (${p.elr.join(", ")})`;
    case "at_risk":
      return "at risk: ISR and ELR empty" + (p.last_known_elr?.length ? ` (last known ELR ${p.last_known_elr.join(", ")})` : "");
    case "isr_only":
      return "ELR empty";
    default:
      return "ELR not read";
  }
}

function compare(a, b) {
  const key = state.sortKey;
  let x = a[key];
  let y = b[key];
  if (key === "status" || key === "worst_partition_status") {
    x = SEVERITY[x] ?? -1;
    y = SEVERITY[y] ?? -1;
  }
  if (x === y) return a.group < b.group ? -1 : a.group > b.group ? 1 : 0;
  if (x === null || x === undefined) return 1;
  if (y === null || y === undefined) return -1;
  return (x < y ? -1 : 1) * state.sortDir;
}

function renderGroups(doc) {
  const section = document.getElementById("groups-section");
  const tbody = document.querySelector("#groups tbody");
  if (doc.groups === null) {
    fill(tbody, [el("tr", {}, el("td", { colspan: 7, class: "dim" }, "lag is off: " + (doc.off.lag || "not run here")))]);
    return;
  }
  document.getElementById("groups-listed").textContent = listedLine(doc);
  const dropped = doc.groups_dropped || [];
  document.getElementById("groups-dropped").textContent = dropped.length
    ? "dropped at ingestion (never stored nor shown): " + dropped.map((d) => d.records + " records of " + d.cluster + " (" + d.reason.replace(/_/g, " ") + ")").join(", ")
    : "no group dropped at ingestion";
  const filter = document.getElementById("group-filter").value.trim().toLowerCase();
  const shown = doc.groups
    .filter((g) => !filter || [g.group, g.cluster, g.status, g.worst_partition_status || "", g.reason].join(" ").toLowerCase().includes(filter))
    .sort(compare);
  fill(
    tbody,
    shown.map((g) => {
      const row = el(
        "tr",
        { "data-group": g.group, "data-cluster": g.cluster, class: "row-" + g.status + (state.selected === g.lag_url ? " selected" : "") },
        el("td", { class: "status-cell" }, badge(g.status)),
        el("td", {}, g.cluster),
        el("td", {}, g.group),
        el("td", {}, g.worst_partition_status ? badge(g.worst_partition_status) : "–"),
        el("td", {}, g.totallag),
        el("td", {}, secs(g.lag_seconds)),
        el("td", { class: "reason" }, g.reason)
      );
      row.addEventListener("click", () => showGroup(g));
      return row;
    })
  );
  if (!shown.length) fill(tbody, [el("tr", {}, el("td", { colspan: 7, class: "dim" }, doc.groups.length ? "no group matches" : listedLine(doc) ? "every group is OK" : "no consumer groups"))]);
  section.dataset.groups = String(doc.groups.length);
}

// The body lists every group not OK and the most lagging OK ones; the line says how many the table leaves out.
function listedLine(doc) {
  const counts = doc.groups_counts || [];
  const total = counts.reduce((n, c) => n + c.groups, 0);
  const listed = counts.reduce((n, c) => n + c.listed, 0);
  if (listed >= total) return "";
  const okLeft = counts.filter((c) => c.status === "OK").reduce((n, c) => n + c.groups - c.listed, 0);
  return `showing ${listed.toLocaleString("en")} of ${total.toLocaleString("en")} groups: every group not OK and the ` +
    `${(doc.groups_limit ?? 0).toLocaleString("en")} most lagging OK ones (${okLeft.toLocaleString("en")} OK groups ` +
    "not listed; any group's detail is on the Burrow API, " + (doc.links.burrow_api || "/v3/kafka") + ")";
}

function showGroup(group) {
  state.selected = group.lag_url;
  state.selectedGroup = group;
  document.getElementById("group-detail-title").textContent = `${group.group} on ${group.cluster}: partitions`;
  document.getElementById("group-detail").hidden = false;
  loadDetail(group);
  if (state.doc) renderGroups(state.doc);
}

// The open group's partitions, from the Burrow route; fetched on click and again at every poll while open.
async function loadDetail(group) {
  const tbody = document.querySelector("#group-partitions tbody");
  try {
    const response = await fetch(here(group.lag_url), { cache: "no-store" });
    const body = await response.json();
    if (state.selected !== group.lag_url) return; // another group was opened meanwhile
    const parts = body.status && body.status.partitions ? body.status.partitions : [];
    fill(
      tbody,
      parts.map((p) =>
        el(
          "tr",
          { class: "row-" + (p.status === "OK" ? "OK" : p.status === "WARN" ? "WARN" : "ERR"), "data-partition": p.partition },
          el("td", {}, p.topic),
          el("td", {}, p.partition),
          el("td", {}, badge(p.status)),
          el("td", {}, p.current_lag),
          el("td", {}, secs(p.lag_seconds)),
          el("td", {}, p.owner || "–"),
          el("td", {}, p.reason || "")
        )
      )
    );
    if (!parts.length) fill(tbody, [el("tr", {}, el("td", { colspan: 7, class: "dim" }, body.message || "no partitions"))]);
  } catch (err) {
    fill(tbody, [el("tr", {}, el("td", { colspan: 7, class: "down" }, "could not read " + group.lag_url + ": " + err))]);
  }
}

function burndown(points) {
  const width = 360;
  const height = 120;
  const pad = 28;
  const chart = svg("svg", { class: "burndown", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  const known = points.filter((p) => p.budget_remaining !== null);
  const title = svg("title");
  title.textContent = "error budget left over time";
  chart.append(title);
  chart.append(svg("line", { class: "axis", x1: pad, y1: 6, x2: pad, y2: height - pad }));
  chart.append(svg("line", { class: "axis", x1: pad, y1: height - pad, x2: width - 6, y2: height - pad }));
  if (known.length === 0) {
    const text = svg("text", { x: pad + 10, y: height / 2 });
    text.textContent = "no budget figures yet";
    chart.append(text);
    return chart;
  }
  const times = known.map((p) => Date.parse(p.at));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const low = Math.min(0, ...known.map((p) => p.budget_remaining));
  const high = Math.max(1, ...known.map((p) => p.budget_remaining));
  const x = (t) => pad + ((t - t0) / Math.max(1, t1 - t0)) * (width - pad - 8);
  const y = (v) => 6 + ((high - v) / (high - low)) * (height - pad - 6);
  chart.append(svg("line", { class: "zero", x1: pad, y1: y(0), x2: width - 6, y2: y(0) }));
  const path = known.map((p, i) => `${i ? "L" : "M"}${x(times[i]).toFixed(1)},${y(p.budget_remaining).toFixed(1)}`).join(" ");
  if (known.length > 1) chart.append(svg("path", { class: "line", d: path }));
  known.forEach((p, i) => chart.append(svg("circle", { class: "point", cx: x(times[i]).toFixed(1), cy: y(p.budget_remaining).toFixed(1), r: 2.5 })));
  for (const [value, label] of [[high, pct(high, 0)], [0, "0 %"]]) {
    const text = svg("text", { x: 2, y: y(value) + 3 });
    text.textContent = label;
    chart.append(text);
  }
  const first = svg("text", { x: pad, y: height - 10 });
  first.textContent = new Date(t0).toISOString().slice(11, 16) + " UTC";
  const last = svg("text", { x: width - 70, y: height - 10 });
  last.textContent = new Date(t1).toISOString().slice(11, 16) + " UTC";
  chart.append(first, last);
  return chart;
}

function renderSlos(doc) {
  const box = document.getElementById("slos");
  if (doc.slos === null) {
    box.replaceChildren(el("p", { class: "dim" }, "SLOs are off: " + (doc.off.slo || "not run here")));
    return;
  }
  if (!doc.slos.length) {
    const schedule = doc.slo_schedule || {};
    box.replaceChildren(el("p", { class: "dim" }, schedule.last_error ? "last evaluation failed: " + schedule.last_error : "waiting for the first evaluation…"));
    return;
  }
  box.replaceChildren(
    ...doc.slos.map((s) => {
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(", ");
      const burns = Object.entries(s.burn_rates).map(([w, r]) => `${w}: ${r === null ? "–" : r.toFixed(2)}`).join(" · ");
      const firing = s.firing.length ? s.firing.map((f) => badge(f === "page" ? "CRIT" : "WARN")) : [el("span", { class: "up" }, "none")];
      const list = el(
        "dl",
        {},
        el("dt", {}, "SLI"), el("dd", {}, pct(s.sli, 3) + ` (objective ${s.objective} %, ${s.window})`),
        el("dt", {}, "budget left"), el("dd", {}, pct(s.budget_remaining, 1)),
        el("dt", {}, "burn rate"), el("dd", {}, burns || "–"),
        el("dt", {}, "firing"), el("dd", { class: "firing" }, ...firing, s.firing.length ? " " + s.firing.join(", ") : ""),
        el("dt", {}, "exhausted at"), el("dd", {}, s.exhaustion_at || "not at this rate"),
        el("dt", {}, "evaluated"), el("dd", {}, s.at)
      );
      return el("div", { class: "slo", "data-slo": s.name }, el("div", {}, el("h3", {}, s.name + (labels ? ` {${labels}}` : "")), list), burndown(s.history));
    })
  );
}

// Share groups as lag's share board judged them; lag not known shows as "unknown", never 0.
function renderShareGroups(doc) {
  const section = document.getElementById("share-groups-section");
  section.hidden = doc.share_groups === null || doc.share_groups === undefined;
  if (section.hidden) return;
  const rows = doc.share_groups.map((g) => {
    const why = g.reason || g.read_reason || (g.status === "UNKNOWN" ? "lag not known" : "");
    return el(
      "tr",
      { "data-share-group": g.group, "data-cluster": g.cluster, class: "row-" + g.status },
      el("td", { class: "status-cell" }, badge(g.status)),
      el("td", {}, g.cluster),
      el("td", {}, el("a", { href: here(g.url) }, g.group)),
      el("td", {}, g.state),
      el("td", {}, String(g.members)),
      el("td", {}, g.totallag === null ? "unknown" : String(g.totallag)),
      el("td", { class: "reason" }, why)
    );
  });
  fill(document.querySelector("#share-groups tbody"), rows.length ? rows : [el("tr", {}, el("td", { colspan: 7, class: "dim" }, "no share groups"))]);
  section.dataset.shareGroups = String(doc.share_groups.length);
}

function render(doc) {
  state.doc = doc;
  renderHeader(doc);
  renderChecks(doc);
  renderBrokers(doc);
  renderGroups(doc);
  renderShareGroups(doc);
  renderSlos(doc);
  if (state.selectedGroup) loadDetail(state.selectedGroup);
  document.body.dataset.generatedAt = doc.generated_at;
}

async function poll() {
  const error = document.getElementById("error");
  try {
    const response = await fetch(here("/api/status"), { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    render(await response.json());
    error.hidden = true;
  } catch (err) {
    error.textContent = "cannot read /api/status: " + err.message + " (retrying)";
    error.hidden = false;
  }
  const pace = state.doc ? state.doc.refresh_s : 5;
  state.timer = setTimeout(poll, Math.max(1, pace) * 1000);
}

function setupSorting() {
  for (const th of document.querySelectorAll("#groups th[data-key]")) {
    th.addEventListener("click", () => {
      const key = th.dataset.key;
      state.sortDir = state.sortKey === key ? -state.sortDir : key === "status" || key.endsWith("lag") || key === "lag_seconds" ? -1 : 1;
      state.sortKey = key;
      for (const other of document.querySelectorAll("#groups th")) other.classList.remove("sorted-asc", "sorted-desc");
      th.classList.add(state.sortDir > 0 ? "sorted-asc" : "sorted-desc");
      if (state.doc) renderGroups(state.doc);
    });
  }
  document.getElementById("group-filter").addEventListener("input", () => state.doc && renderGroups(state.doc));
}

document.addEventListener("DOMContentLoaded", () => {
  setupSorting();
  poll();
});
