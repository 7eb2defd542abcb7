// The contextwarden proxy's live page. Every string from the proxy goes into the DOM as text
// (textContent, attributes set one by one); nothing is parsed as HTML.
"use strict";

const KEY = "contextwarden-live-key";
const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 2000;
let selected = decodeURIComponent(location.hash.slice(1));
let timer = null;

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

const int = (n) => Number(n).toLocaleString("en-US");
const usd = (n) => Number(n).toFixed(4);

// A numeric cell: the figure as shown, and its exact value in data-value.
function num(value, shown) {
  const td = el("td", shown);
  td.dataset.value = String(value);
  return td;
}

function headerRow(table, names) {
  const tr = el("tr");
  for (const [name, cls] of names) tr.append(el("th", name, cls));
  table.append(tr);
}

function key() {
  return sessionStorage.getItem(KEY) || "";
}

async function getJSON(path) {
  const response = await fetch(path, { headers: { "x-api-key": key() }, cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

function status(text) {
  document.getElementById("status").textContent = text;
}

function sessionRow(s, notes, isTotal) {
  const tr = el("tr", null, isTotal ? "total" : "session");
  tr.dataset.session = s.session_id;
  tr.append(el("td", isTotal ? "total" : s.session_id, "text"));
  tr.append(el("td", s.model, "text"));
  tr.append(el("td", s.mode, "text"));
  tr.append(num(s.requests, int(s.requests)));
  tr.append(num(s.fallbacks, int(s.fallbacks)));
  tr.append(num(s.client_tokens, int(s.client_tokens)));
  tr.append(num(s.forwarded_tokens, int(s.forwarded_tokens)));
  tr.append(num(s.cache_read_tokens, int(s.cache_read_tokens)));
  tr.append(num(s.cache_write_tokens, int(s.cache_write_tokens)));
  tr.append(num(s.effective_cost_usd, "$" + usd(s.effective_cost_usd)));
  tr.append(num(s.client_cost_usd, "$" + usd(s.client_cost_usd)));
  tr.append(num(s.saving_usd, "$" + usd(s.saving_usd)));
  tr.append(num(s.cost_ratio === null ? "" : s.cost_ratio, s.cost_ratio === null ? "-" : Number(s.cost_ratio).toFixed(3)));
  const events = notes ? notes.window_events : [];
  const last = events.length ? events[events.length - 1] : null;
  tr.append(el("td", isTotal ? "" : last ? `${events.length}, last: ${last.kind}` : "none", "text"));
  tr.append(el("td", isTotal ? "" : (notes ? notes.warnings.join("; ") : ""), "text warn"));
  if (!isTotal) {
    if (s.session_id === selected) tr.classList.add("selected");
    tr.addEventListener("click", () => {
      selected = s.session_id;
      location.hash = encodeURIComponent(selected);
      refresh();
    });
  }
  return tr;
}

function renderSessions(data) {
  const table = document.getElementById("sessions");
  table.replaceChildren();
  headerRow(table, [
    ["session", "text"], ["model", "text"], ["mode", "text"], ["requests"], ["fall-backs"], ["sent"],
    ["forwarded"], ["cache read"], ["cache write"], ["billed $"], ["direct $"], ["saving $"], ["ratio"],
    ["window events", "text"], ["warnings", "text"],
  ]);
  for (const s of data.stats.sessions) table.append(sessionRow(s, data.notes[s.session_id], false));
  table.append(sessionRow(data.stats.total, null, true));
  const who = data.operator ? "every session (operator token)" : "the sessions of this key";
  status(`${data.stats.sessions.length} session(s), ${who}; updated ${new Date().toLocaleTimeString()}`);
  return data.stats.sessions.some((s) => s.session_id === selected);
}

function lineChart(rows, series, height) {
  const width = 520, pad = 34;
  const chart = svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  const top = Math.max(1, ...series.flatMap((s) => s.values));
  const n = Math.max(1, rows.length - 1);
  const x = (i) => pad + (i * (width - 2 * pad)) / n;
  const y = (v) => height - pad + 10 - (v * (height - pad - 10)) / top;
  chart.append(svg("line", { x1: pad, y1: y(0), x2: width - pad, y2: y(0), stroke: "#aab" }));
  const label = svg("text", { x: 2, y: 12, "font-size": 10, fill: "#4a5263" });
  label.textContent = series[0].unit(top);
  chart.append(label);
  for (const s of series) {
    if (s.bars) {
      const w = Math.max(2, (width - 2 * pad) / (rows.length + 1) - 2);
      s.values.forEach((v, i) => {
        chart.append(svg("rect", { x: x(i) - w / 2, y: y(v), width: w, height: y(0) - y(v), fill: s.color, class: s.name }));
      });
      continue;
    }
    const points = s.values.map((v, i) => `${x(i)},${y(v)}`).join(" ");
    chart.append(svg("polyline", { points, fill: "none", stroke: s.color, "stroke-width": 2, class: s.name }));
  }
  let lx = pad;
  for (const s of series) {
    const t = svg("text", { x: lx, y: height - 4, "font-size": 11, fill: s.color });
    t.textContent = s.label;
    chart.append(t);
    lx += 8 * s.label.length + 16;
  }
  return chart;
}

function renderCharts(rows) {
  const tokens = lineChart(rows, [
    { name: "forwarded", label: "forwarded", color: "#9db1ea", bars: true, values: rows.map((r) => r.forwarded_tokens), unit: int },
    { name: "cached", label: "cache read", color: "#3a57a8", bars: true, values: rows.map((r) => r.cache_read_tokens), unit: int },
    { name: "sent", label: "sent by the client", color: "#c0392b", values: rows.map((r) => r.client_tokens), unit: int },
  ], 220);
  let billed = 0, direct = 0;
  const cumBilled = rows.map((r) => (billed += r.effective_cost_usd));
  const cumDirect = rows.map((r) => (direct += r.client_cost_usd));
  const cost = lineChart(rows, [
    { name: "direct", label: "direct", color: "#c0392b", values: cumDirect, unit: (v) => "$" + usd(v) },
    { name: "billed", label: "billed", color: "#3a57a8", values: cumBilled, unit: (v) => "$" + usd(v) },
  ], 220);
  document.getElementById("tokens-chart").replaceChildren(tokens);
  document.getElementById("cost-chart").replaceChildren(cost);
}

function composition(id, title, rows, total, windowSize) {
  const table = document.getElementById(id);
  table.replaceChildren();
  headerRow(table, [[title, "text"], ["tokens"], ["% of window"], ["", "text"]]);
  for (const [name, part] of Object.entries(rows)) {
    const tokens = part.tokens;
    if (!tokens) continue;
    const tr = el("tr");
    const share = windowSize ? (100 * tokens) / windowSize : 0;
    tr.append(el("td", name, "text"), num(tokens, int(tokens)), el("td", share.toFixed(1)));
    const bar = el("span", null, "bar");
    bar.style.width = `${Math.max(1, Math.round(share * 3))}px`;
    const cell = el("td", null, "text");
    cell.append(bar);
    tr.append(cell);
    table.append(tr);
  }
  const tr = el("tr", null, "total");
  tr.append(el("td", "total", "text"), num(total, int(total)), el("td", windowSize ? ((100 * total) / windowSize).toFixed(1) : "0.0"), el("td"));
  table.append(tr);
}

function simpleTable(id, names, rows) {
  const table = document.getElementById(id);
  table.replaceChildren();
  headerRow(table, names.map(([name, , cls]) => [name, cls]));
  for (const row of rows) {
    const tr = el("tr");
    for (const [, get, cls] of names) tr.append(el("td", get(row), cls));
    table.append(tr);
  }
  if (!rows.length) {
    const tr = el("tr");
    const td = el("td", "none", "text");
    td.colSpan = names.length;
    tr.append(td);
    table.append(tr);
  }
}

function renderWindow(view) {
  const line = document.getElementById("window-line");
  if (!view || view.error) {
    line.textContent = view ? `not available: ${view.error}` : "the store holds no log for this session";
    for (const id of ["sections", "tiers", "decisions"]) document.getElementById(id).replaceChildren();
    return;
  }
  line.textContent = `request ${view.turn} of ${view.turns} (the next one): model ${view.model}, ` +
    `${int(view.total_tokens)} tokens of a ${int(view.window)}-token window`;
  composition("sections", "section", view.sections, view.total_tokens, view.window);
  composition("tiers", "tier", view.tiers, view.total_tokens, view.window);
  simpleTable("decisions", [
    ["action", (d) => d.action, "text"], ["recall id", (d) => d.target, "text"],
    ["what the model sees now", (d) => d.what, "text"],
    ["saved", (d) => (d.tokens_saved ? int(d.tokens_saved) : "")], ["why", (d) => d.reason, "text"],
  ], view.decisions);
}

async function renderDetail(sessionNotes) {
  const detail = document.getElementById("detail");
  if (!selected) {
    detail.hidden = true;
    return;
  }
  const data = await getJSON(`/contextwarden/live/session?id=${encodeURIComponent(selected)}`);
  detail.hidden = false;
  document.getElementById("detail-title").textContent = `Session ${data.session_id}`;
  const warnings = document.getElementById("warnings");
  warnings.replaceChildren(...(sessionNotes ? sessionNotes.warnings : []).map((w) => el("p", w)));
  renderCharts(data.rows);
  renderWindow(data.window);
  simpleTable("events", [
    ["seq", (e) => e.seq], ["event", (e) => e.kind, "text"], ["cause", (e) => e.cause, "text"],
    ["tokens before", (e) => int(e.tokens_before)], ["after", (e) => int(e.tokens_after)],
  ], sessionNotes ? sessionNotes.window_events : []);
  simpleTable("requests", [
    ["#", (r) => data.rows.indexOf(r) + 1], ["outcome", (r) => r.outcome, "text"], ["status", (r) => r.status],
    ["sent", (r) => int(r.client_tokens)], ["forwarded", (r) => int(r.forwarded_tokens)],
    ["cache read", (r) => int(r.cache_read_tokens)], ["cache write", (r) => int(r.cache_write_tokens)],
    ["output", (r) => int(r.output_tokens)], ["billed $", (r) => usd(r.effective_cost_usd)],
    ["direct $", (r) => usd(r.client_cost_usd)], ["note", (r) => r.note, "text"],
  ], data.rows);
}

async function refresh() {
  clearTimeout(timer);
  try {
    const data = await getJSON("/contextwarden/live/sessions");
    const known = renderSessions(data);
    if (!known) selected = "";
    await renderDetail(data.notes[selected]);
  } catch (err) {
    status(`could not read the proxy: ${err.message}`);
  }
  timer = setTimeout(refresh, POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, document.getElementById("key").value.trim());
    document.getElementById("key").value = "";
    refresh();
  });
  document.getElementById("forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    selected = "";
    refresh();
  });
  refresh();
});
