// armac-eval serve: the page's script (no libraries). It talks to the JSON API of
// src/serve; with ?autotest=1 it also plays one hand by itself and writes what it saw into
// #autotest-result (the browser test reads it back).
"use strict";

const ACTION_COLORS = { fold: "#5b8bd0", call: "#5cb85c", pot: "#e8a33d", "all-in": "#c9302c" };
const $ = (id) => document.getElementById(id);
const state = { models: [], model: null, history: [], board: "", tableOffset: 0, session: null, view: null, runTimer: null };

function showError(msg) {
  const e = $("error");
  e.textContent = msg;
  e.hidden = false;
  setTimeout(() => { e.hidden = true; }, 6000);
}

async function api(path, body) {
  const opts = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(path, opts);
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || ("HTTP " + r.status));
  return j;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") e.onclick = v; else if (k === "style") e.style.cssText = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function pct(x) { return (100 * x).toFixed(1) + "%"; }

function headName() { return $("head").value; }

// ---- models ----
async function loadModels() {
  const j = await api("/api/models");
  state.models = j.models;
  const sel = $("model");
  sel.innerHTML = "";
  for (const m of j.models) sel.append(el("option", { value: m.id }, m.id + ": " + m.name));
  sel.onchange = () => selectModel(Number(sel.value));
  $("head").onchange = () => refreshStrategy();
  const wanted = Number(new URLSearchParams(location.search).get("model") || 0);
  const first = j.models.some((m) => m.id === wanted) ? wanted : 0;
  sel.value = first;
  await selectModel(first);
}

async function selectModel(id) {
  const m = state.models[id];
  state.model = m;
  $("game").textContent = m.game;
  const head = $("head");
  head.innerHTML = "";
  for (const h of m.heads) head.append(el("option", { value: h }, h));
  state.history = [];
  state.tableOffset = 0;
  $("holdem").hidden = m.kind !== "holdem";
  $("table-view").hidden = m.kind === "holdem";
  $("run").hidden = !m.run;
  await refreshStrategy();
  if (m.run) { await refreshRun(); startRunPolling(); } else stopRunPolling();
}

async function refreshStrategy() {
  if (state.model.kind === "holdem") return refreshChart();
  return refreshTable();
}

// ---- Hold'em chart ----
function cellBackground(actions, probs) {
  let at = 0;
  const stops = [];
  actions.forEach((a, i) => {
    const c = ACTION_COLORS[a.label] || "#999";
    const next = at + 100 * probs[i];
    stops.push(`${c} ${at.toFixed(2)}%`, `${c} ${next.toFixed(2)}%`);
    at = next;
  });
  return `linear-gradient(to right, ${stops.join(", ")})`;
}

async function refreshChart() {
  const m = state.model;
  const q = new URLSearchParams({ model: m.id, policy: headName(), history: state.history.join(","), board: state.board });
  const j = await api("/api/chart?" + q);
  renderCrumbs();
  const chart = $("chart");
  const next = $("next-actions");
  next.innerHTML = "";
  if (j.status === "needs_board") {
    $("chart-status").textContent = `round ${j.round} needs board cards: enter ${j.round === 1 ? "3" : "1 more"} in the board field (the history used ${j.dealt})`;
    chart.innerHTML = "";
    $("chart-summary").textContent = "";
    return j;
  }
  if (j.status === "terminal") {
    $("chart-status").textContent = "the hand is over after this betting";
    chart.innerHTML = "";
    $("chart-summary").textContent = "";
    return j;
  }
  $("chart-status").textContent = `player ${j.player} to act, round ${j.round}, pot ${j.pot}` + (j.board ? `, board ${j.board}` : "");
  const legend = $("legend");
  legend.innerHTML = "";
  for (const a of j.actions) legend.append(el("span", {}, el("span", { class: "swatch", style: "background:" + (ACTION_COLORS[a.label] || "#999") }), a.label));
  chart.innerHTML = "";
  const total = new Array(j.actions.length).fill(0);
  let combos = 0;
  for (const c of j.cells) {
    const d = el("div", { class: "cell" }, c.label);
    if (c.probs) {
      d.style.background = cellBackground(j.actions, c.probs);
      const text = j.actions.map((a, i) => `${a.label} ${pct(c.probs[i])}`).join("\n");
      d.title = `${c.label} (${c.combos} combos)\n${text}`;
      d.onmouseenter = () => { $("cell-detail").innerText = d.title; };
      c.probs.forEach((p, i) => { total[i] += p * c.combos; });
      combos += c.combos;
    } else {
      d.classList.add("empty");
      d.title = `${c.label}: every combo meets the board`;
    }
    chart.append(d);
  }
  $("chart-summary").textContent = "whole range: " + j.actions.map((a, i) => `${a.label} ${pct(total[i] / combos)}`).join(", ");
  for (const a of j.actions) {
    next.append(el("button", { onclick: () => { state.history.push(a.action); refreshChart().catch((e) => showError(e.message)); } }, a.label));
  }
  return j;
}

function renderCrumbs() {
  const names = ["fold", "call", "pot", "all-in"];
  const c = $("crumbs");
  c.innerHTML = "";
  c.append(el("button", { class: "crumb", onclick: () => { state.history = []; refreshChart().catch((e) => showError(e.message)); } }, "start"));
  state.history.forEach((a, i) => {
    c.append(" › ", el("button", { class: "crumb", onclick: () => { state.history = state.history.slice(0, i + 1); refreshChart().catch((e) => showError(e.message)); } }, names[a] || String(a)));
  });
}

// ---- infostate table ----
async function refreshTable() {
  const q = new URLSearchParams({ model: state.model.id, policy: headName(), player: $("table-player").value, filter: $("table-filter").value, offset: state.tableOffset, limit: 100 });
  const j = await api("/api/table?" + q);
  const body = $("table").querySelector("tbody");
  body.innerHTML = "";
  for (const r of j.rows) {
    const acts = el("td");
    for (const a of r.actions) {
      acts.append(el("div", {}, el("span", { class: "bar", style: `width:${(60 * a.prob).toFixed(1)}px` }), ` ${a.label} ${pct(a.prob)}`));
    }
    body.append(el("tr", {}, el("td", {}, String(r.player)), el("td", { class: "cards" }, r.cards || "-"), el("td", { class: "infostate" }, r.infostate), acts));
  }
  state.tableMatching = j.matching;
  const end = Math.min(j.offset + j.rows.length, j.matching);
  $("table-status").textContent = `${j.offset + 1}-${end} of ${j.matching} matching (${j.total} information states)`;
  return j;
}

// ---- play ----
async function newMatch() {
  const v = await api("/api/play/new", { model: state.model.id, policy: headName(), seat: Number($("seat").value) });
  state.session = v.session;
  const link = $("play-history");
  link.href = "/api/play/history?session=" + encodeURIComponent(v.session);
  link.hidden = false;
  renderHand(v);
  return v;
}

async function act(action) {
  const v = state.view;
  const next = await api("/api/play/act", { session: state.session, hand: v.hand, step: v.step, action });
  renderHand(next);
  return next;
}

async function nextHand() {
  const v = await api("/api/play/next", { session: state.session });
  renderHand(v);
  return v;
}

function renderHand(v) {
  state.view = v;
  $("hand-no").textContent = v.hand;
  $("hand-seat").textContent = v.seat;
  $("your-cards").textContent = v.your_cards.join(" ") || "-";
  $("hand-board").textContent = v.board.join(" ") || "-";
  $("hand-pot").textContent = v.pot === null ? "-" : v.pot;
  $("hand-infostate").textContent = v.infostate;
  $("model-cards").textContent = v.over ? (v.model_cards.join(" ") || "-") : "hidden";
  const ev = $("events");
  ev.innerHTML = "";
  for (const e of v.events) ev.append(el("li", { class: e.who }, `${e.who}: ${e.label}`));
  const acts = $("your-actions");
  acts.innerHTML = "";
  for (const a of v.legal) acts.append(el("button", { onclick: () => act(a.action).catch((e) => showError(e.message)) }, a.label));
  $("hand-result").textContent = v.over ? `hand over: you ${v.hand_result >= 0 ? "won" : "lost"} ${Math.abs(v.hand_result)} chips` : (v.legal.length ? "your move" : "");
  $("play-next").disabled = !v.over;
  const r = v.result;
  $("match-result").textContent = r.hands === 0 ? "no finished hand yet" :
    `${r.hands} hand(s): ${r.mean.toFixed(1)} ${r.unit}` + (r.ci95 === null ? "" : ` ± ${r.ci95.toFixed(1)} (95%)`);
}

// ---- run view ----
function linePlot(title, xs, series, xlabel) {
  const W = 420, H = 220, L = 56, R = 10, T = 22, B = 30;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("class", "plot");
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e); return e;
  };
  const pts = [];
  for (const s of series) s.ys.forEach((y, i) => { if (y !== null && xs[i] !== null) pts.push([xs[i], y, s.lo ? s.lo[i] : y, s.hi ? s.hi[i] : y]); });
  add("text", { x: L, y: 14 }, title);
  if (pts.length === 0) { add("text", { x: L, y: H / 2 }, "no data yet"); return svg; }
  let x0 = Math.min(...pts.map((p) => p[0])), x1 = Math.max(...pts.map((p) => p[0]));
  let y0 = Math.min(...pts.map((p) => Math.min(p[1], p[2]))), y1 = Math.max(...pts.map((p) => Math.max(p[1], p[3])));
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y1 += 1; y0 -= 1; }
  const sx = (x) => L + (x - x0) / (x1 - x0) * (W - L - R);
  const sy = (y) => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  add("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999" });
  add("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#999" });
  for (const y of [y0, (y0 + y1) / 2, y1]) add("text", { x: 2, y: sy(y) + 4 }, Number(y.toPrecision(3)).toString());
  add("text", { x: L, y: H - 8 }, String(x0));
  add("text", { x: W - R - 40, y: H - 8 }, String(x1));
  add("text", { x: (W - L) / 2 + L - 20, y: H - 8 }, xlabel);
  const colors = ["#2f62b3", "#c9302c", "#3a8d3a", "#8a5ab8"];
  series.forEach((s, k) => {
    const idx = xs.map((_, i) => i).filter((i) => s.ys[i] !== null && xs[i] !== null);
    if (s.lo && s.hi && idx.length) {
      const up = idx.map((i) => `${sx(xs[i])},${sy(s.hi[i])}`);
      const down = idx.slice().reverse().map((i) => `${sx(xs[i])},${sy(s.lo[i])}`);
      add("polygon", { points: up.concat(down).join(" "), fill: colors[k % 4], opacity: 0.18 });
    }
    add("polyline", { points: idx.map((i) => `${sx(xs[i])},${sy(s.ys[i])}`).join(" "), fill: "none", stroke: colors[k % 4], "stroke-width": 1.6 });
  });
  return svg;
}

function column(table, name) {
  const k = table.columns.indexOf(name);
  return k < 0 ? null : table.rows.map((r) => (k < r.length ? r[k] : null));
}

async function refreshRun() {
  const j = await api("/api/run?model=" + state.model.id);
  $("run-dir").textContent = j.run;
  const plots = $("plots");
  plots.innerHTML = "";
  const sel = $("run-metric");
  if (j.metrics) {
    const keep = sel.value;
    const cols = j.metrics.columns.filter((c) => c !== "epoch");
    if (sel.options.length !== cols.length) {
      sel.innerHTML = "";
      for (const c of cols) sel.append(el("option", { value: c }, c));
      sel.value = cols.includes(keep) ? keep : (cols.includes("nash_conv") ? "nash_conv" : cols[0]);
      sel.onchange = () => refreshRun().catch((e) => showError(e.message));
    }
    const xs = column(j.metrics, "epoch") || j.metrics.rows.map((_, i) => i);
    plots.append(linePlot(`${sel.value} (metrics.csv)`, xs, [{ ys: column(j.metrics, sel.value) }], "epoch"));
  }
  for (const l of j.lbr) {
    const t = l.table;
    const mean = column(t, "mean_mbb"), ci = column(t, "ci95_mbb");
    const lo = mean.map((m, i) => (m === null || ci[i] === null ? null : m - ci[i]));
    const hi = mean.map((m, i) => (m === null || ci[i] === null ? null : m + ci[i]));
    plots.append(linePlot(`LBR-${l.variant} winnings, mbb/hand (95% band)`, column(t, "step"), [{ ys: mean, lo, hi }], "epoch"));
  }
  $("run-status").textContent = `updated ${new Date().toLocaleTimeString()}` + (j.metrics ? `, ${j.metrics.total_rows} rows` : ", no metrics.csv yet") + (j.refused || []).map((r) => `; ${r}`).join("");
  return j;
}

function startRunPolling() {
  stopRunPolling();
  state.runTimer = setInterval(() => refreshRun().catch(() => {}), 5000);
}

function stopRunPolling() {
  if (state.runTimer) clearInterval(state.runTimer);
  state.runTimer = null;
}

// ---- autotest: play one hand, check what rendered, report into the DOM ----
async function autotest() {
  const out = { ok: false };
  try {
    const m = state.model;
    out.model = m.name;
    if (m.kind === "holdem") {
      const j = await refreshChart();
      out.chart_cells = document.querySelectorAll("#chart .cell").length;
      out.chart_coloured = Array.from(document.querySelectorAll("#chart .cell")).filter((c) => c.style.background.includes("gradient")).length;
      out.chart_player = j.player;
    } else {
      const j = await refreshTable();
      out.table_rows = document.querySelectorAll("#table tbody tr").length;
      out.table_total = j.total;
      out.table_cards = Array.from(document.querySelectorAll("#table tbody td.cards")).map((c) => c.textContent);
    }
    // Hands until one in which the person acted ends (the model may fold at once).
    let v = await newMatch();
    // What the person sees at the first decision: the pot beside the game's own string, the
    // buttons, the cards.
    out.first_pot = $("hand-pot").textContent;
    out.first_infostate = v.infostate;
    out.first_buttons = Array.from(document.querySelectorAll("#your-actions button")).map((b) => b.textContent);
    out.first_cards = $("your-cards").textContent;
    let moves = 0;
    for (let hand = 1; hand <= 20; hand++) {
      if (hand > 1) v = await nextHand();
      moves = 0;
      while (!v.over && moves < 100) {
        const pick = v.legal.find((a) => /call|check|pass/i.test(a.label)) || v.legal[0];
        v = await act(pick.action);
        moves += 1;
      }
      if (moves > 0) break;
    }
    out.hand_over = v.over;
    out.hands = v.hand;
    out.moves = moves;
    out.events = document.querySelectorAll("#events li").length;
    out.model_cards = $("model-cards").textContent;
    out.result = $("match-result").textContent;
    out.history_link = $("play-history").getAttribute("href");
    out.ok = v.over === true;
  } catch (e) {
    out.error = String(e && e.message ? e.message : e);
  }
  const pre = $("autotest-result");
  pre.textContent = JSON.stringify(out);
  pre.setAttribute("data-done", "1");
  document.title = "autotest done";
}

$("board-apply").onclick = () => { state.board = $("board").value.trim(); refreshChart().catch((e) => showError(e.message)); };
$("table-filter").oninput = () => { state.tableOffset = 0; refreshTable().catch((e) => showError(e.message)); };
$("table-player").onchange = () => { state.tableOffset = 0; refreshTable().catch((e) => showError(e.message)); };
$("table-prev").onclick = () => { state.tableOffset = Math.max(0, state.tableOffset - 100); refreshTable().catch((e) => showError(e.message)); };
$("table-next").onclick = () => { if (state.tableOffset + 100 >= state.tableMatching) return; state.tableOffset += 100; refreshTable().catch((e) => showError(e.message)); };
$("play-new").onclick = () => newMatch().catch((e) => showError(e.message));
$("play-next").onclick = () => nextHand().catch((e) => showError(e.message));

loadModels()
  .then(() => { if (new URLSearchParams(location.search).get("autotest") === "1") return autotest(); })
  .catch((e) => {
    showError(e.message);
    const pre = $("autotest-result");
    pre.textContent = JSON.stringify({ ok: false, error: e.message });
    pre.setAttribute("data-done", "1");
  });
