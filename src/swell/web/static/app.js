// swell dashboard: live updates with EventSource. Plain JavaScript, no dependencies.
// Everything agents produced reaches the page either as server-rendered (escaped)
// HTML fragments or through textContent, never as markup built here.
"use strict";

function refresh(box, then) {
  if (!box || box.dataset.loading) { if (box) box.dataset.again = "1"; return; }
  box.dataset.loading = "1";
  fetch(box.dataset.fragment, { credentials: "same-origin" })
    .then(function (r) { return r.ok ? r.text() : null; })
    .then(function (html) {
      if (html === null) return;
      var next = document.createElement("template");
      next.innerHTML = html;  // the server's escaped HTML: parsed, never run
      patchChildren(box, next.content);
      relativeTimes(box);
      tick();
      if (then) then();
    })
    .finally(function () {
      delete box.dataset.loading;
      if (box.dataset.again) { delete box.dataset.again; setTimeout(function () { refresh(box, then); }, 300); }
    });
}

// A fresh fragment merged into the page element by element: what did not change stays
// the same DOM node (a graph node keeps its identity, focus and hover while its state
// changes), what is new (a timeline bar, a table row) is added, what went is removed.
function keyOf(n) {
  if (n.nodeType !== 1) return n.nodeName;
  var a = function (name) { return n.getAttribute(name) || ""; };
  var key = a("id") || a("data-key") || a("data-child-run") + "/" + a("data-step") + a("data-child-step") + "#" + a("data-visit") + a("data-from") + ">" + a("data-to") + ":" + a("data-kind");
  return n.nodeName + "|" + (key === "/#>:" ? "" : key);
}

function patch(old, next) {
  if (old.nodeType !== 1) { if (old.nodeValue !== next.nodeValue) old.nodeValue = next.nodeValue; return; }
  var i, attr;
  for (i = old.attributes.length - 1; i >= 0; i--) {
    attr = old.attributes[i];
    if (!next.hasAttribute(attr.name) && attr.name !== "title" && attr.name !== "data-exact") old.removeAttribute(attr.name);
  }
  for (i = 0; i < next.attributes.length; i++) {
    attr = next.attributes[i];
    if (attr.name === "title" && old.dataset.exact) continue;  // relativeTimes' exact time
    if (old.getAttribute(attr.name) !== attr.value) old.setAttribute(attr.name, attr.value);
  }
  if (old.nodeName === "TIME" && old.getAttribute("datetime") === next.getAttribute("datetime")) return;
  patchChildren(old, next);
}

function patchChildren(parent, next) {
  var olds = {};
  Array.prototype.forEach.call(parent.childNodes, function (c) {
    var k = keyOf(c);
    (olds[k] = olds[k] || []).push(c);
  });
  var at = 0;
  Array.prototype.slice.call(next.childNodes).forEach(function (c) {
    var list = olds[keyOf(c)], old = list && list.shift();
    if (old) patch(old, c); else old = c;  // new: moved in from the fragment
    var here = parent.childNodes[at];
    if (here !== old) parent.insertBefore(old, here || null);
    at++;
  });
  while (parent.childNodes.length > at) parent.removeChild(parent.lastChild);
}

// what one event changes on the run page, patched at once (the fragment follows)
var STATES = { "step.started": "running", "gate.waiting": "waiting", "gate.resolved": "running" };
var FILLS = { succeeded: "#dcf3e3", failed: "#fde3e1", running: "#e3eefc", waiting: "#fff1c7" };

function stateOf(event) {
  if (event.type === "step.finished") return event.outcome === "success" ? "succeeded" : "failed";
  return STATES[event.type];
}

// a child run's step, drawn inside its group on the parent's graph
function applyChildEvent(runId, event) {
  var state = stateOf(event);
  if (!state || !event.step_id) return;
  var sel = 'g.child-steps[data-child-run="' + CSS.escape(runId) + '"] rect[data-child-step="' + CSS.escape(event.step_id) + '"]';
  document.querySelectorAll("#live-run " + sel).forEach(function (rect) {
    rect.setAttribute("class", "child-step s-" + state);
    rect.setAttribute("fill", FILLS[state]);
  });
}

// A live stream: through the SharedWorker (static/streams.js) that holds one per
// browser for all its tabs, else an EventSource of the page's own. `handle(name,
// data, id)` gets each message of the named SSE events; a page may see a message
// again (a tab that comes later is sent the kept ones), so it skips what it has.
var worker = null, following = {};

function direct(url, names, handle) {
  var source = new EventSource(url, { withCredentials: true });
  names.forEach(function (name) {
    source.addEventListener(name, function (msg) { handle(name, msg.data, msg.lastEventId); });
  });
  return function () { source.close(); };
}

function fromWorker(e) {
  var m = e.data, f = following[m.key];
  if (!f) return;
  if (m.event === "gap") { f.stop = direct(f.url, f.names, f.handle); return; }
  if (!f.stop) f.handle(m.event, m.data, m.id);
}

function follow(url, names, handle) {
  var u = new URL(url, location.href), after = Number(u.searchParams.get("after")) || 0;
  u.searchParams.delete("after");
  var key = u.pathname + u.search;
  if (typeof SharedWorker !== "function") return direct(url, names, handle);
  try {
    if (!worker) {
      worker = new SharedWorker("/static/streams.js", { name: "swell-streams" });
      worker.port.onmessage = fromWorker;
      worker.port.start();
      window.addEventListener("pagehide", function () { worker.port.postMessage({ op: "bye" }); });
      // back from the back-forward cache: its streams were left; the page starts afresh
      window.addEventListener("pageshow", function (e) { if (e.persisted) location.reload(); });
    }
  } catch (err) {
    return direct(url, names, handle);
  }
  var f = following[key] = { url: url, names: names, handle: handle, stop: null };
  worker.port.postMessage({ op: "follow", key: key, after: after, names: names });
  return function () {
    if (following[key] === f) delete following[key];
    if (f.stop) f.stop(); else worker.port.postMessage({ op: "leave", key: key });
  };
}

// a run's stream in batches (`?batch=1`: one message per 50 ms window at most, one
// JSON.parse for all its events), each event once, in order
function followRun(url, onEvents, onEnd) {
  var last = Number(new URL(url, location.href).searchParams.get("after")) || 0;
  var stop = follow(url + "&batch=1", ["batch", "end"], function (name, data) {
    if (name === "end") { stop(); onEnd(); return; }
    var fresh = JSON.parse(data).filter(function (event) { return event.seq > last; });
    if (!fresh.length) return;
    last = fresh[fresh.length - 1].seq;
    onEvents(fresh);
  });
  return stop;
}

// the child runs still going that a group shows get streams of their own (three at
// most: without the shared worker a browser opens six connections to a host)
var childStreams = {}, childrenDone = {};

function watchChildren(update) {
  // a group that runs but lists no child run yet: its child is being made; ask again
  document.querySelectorAll("#live-run g.node.s-running").forEach(function (node) {
    if (/^(sub|fan)$/.test(node.dataset.kind || "") && !node.querySelector("a[data-child-run]")) update();
  });
  document.querySelectorAll("#live-run a[data-child-run][data-live]").forEach(function (a) {
    var id = a.dataset.childRun;
    if (childStreams[id] || childrenDone[id] || Object.keys(childStreams).length >= 3) return;
    // a child's step changes only its square; its end brings the server's fragment
    childStreams[id] = followRun("/api/runs/" + encodeURIComponent(id) + "/stream?after=0", function (events) {
      events.forEach(function (event) { applyChildEvent(id, event); });
    }, function () { delete childStreams[id]; childrenDone[id] = 1; update(); });
  });
}

function applyEvent(event) {
  var state = stateOf(event);
  if (!state || !event.step_id) return;
  var sel = 'g.node[data-step="' + CSS.escape(event.step_id) + '"]';
  document.querySelectorAll("#live-run " + sel).forEach(function (node) {
    var visits = Math.max(Number(node.dataset.visits) || 0, event.visit || 0);
    node.dataset.visits = String(visits);
    node.setAttribute("class", node.getAttribute("class").replace(/ s-\w+| unvisited/g, "") + " s-" + state);
    var box = node.querySelector(":scope > .body .box, :scope > a > .body .box");
    if (box) box.setAttribute("fill", FILLS[state]);
    var note = node.querySelector(":scope > .body .note, :scope > a > .body .note");
    if (note) note.textContent = visits + " visit" + (visits === 1 ? "" : "s") + " · " + state;
  });
}

// the rest of the run page an event changes: counts, the visit's table row, its
// timeline bar. Whatever an event changes that these cannot place (a new lane, a
// gate's form, a child run, the run's end) asks for the server's fragment instead.
var BAR_KINDS = { gate: "gate", prompt: "agent" };

function addTo(id, by, digits) {
  var el = document.getElementById(id);
  if (!el || !by) return;
  var n = (Number(el.textContent) || 0) + by;
  el.textContent = digits ? n.toFixed(digits) : String(n);
}

function el(tag, text, cls) {
  var e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function visitRow(rows, event) {
  var run = rows.dataset.run, href = "/runs/" + encodeURIComponent(run) + "/visits/" + encodeURIComponent(event.step_id) + "/" + event.visit;
  var tr = el("tr", undefined, "status-running");
  tr.dataset.key = event.step_id + "#" + event.visit;
  var link = el("a", event.step_id); link.href = href;
  var first = el("td"); first.appendChild(link); tr.appendChild(first);
  tr.appendChild(el("td", String(event.visit), "num"));
  tr.appendChild(el("td", event.kind || ""));
  var badge = el("td"); badge.appendChild(el("span", "running", "badge running")); tr.appendChild(badge);
  tr.appendChild(el("td", "", "num"));
  var when = el("td"), t = el("time", "just now"); t.setAttribute("datetime", event.ts); when.appendChild(t); tr.appendChild(when);
  var took = el("td", undefined, "num"), since = el("span", "0 ms"); since.dataset.since = event.ts; took.appendChild(since); tr.appendChild(took);
  tr.appendChild(el("td", "0 / 0", "num"));
  tr.appendChild(el("td", ""));
  return tr;
}

function patchRow(event, status) {
  var rows = document.getElementById("visit-rows");
  if (!status || !event.step_id) return true;
  if (!rows) return true;
  var key = event.step_id + "#" + event.visit;
  var tr = rows.querySelector('tr[data-key="' + CSS.escape(key) + '"]');
  if (!tr && event.type === "step.started") {
    if (rows.dataset.page !== "1") return true;  // older pages keep what they show
    rows.insertBefore(visitRow(rows, event), rows.firstChild);
    var most = Number(rows.dataset.perPage) || 100;
    while (rows.children.length > most) rows.removeChild(rows.lastElementChild);
    return true;
  }
  if (!tr) return rows.dataset.page !== "1";
  var cells = tr.children;
  tr.className = "status-" + status;
  var badge = cells[3] && cells[3].firstElementChild;
  if (badge) { badge.className = "badge " + status; badge.textContent = status; }
  if (event.type === "step.finished") {
    cells[4].textContent = event.exit_code === null || event.exit_code === undefined ? "" : String(event.exit_code);
    var took = cells[6].firstElementChild || cells[6];
    delete took.dataset.since;
    took.textContent = fmtMs(event.duration_ms || 0);
    cells[7].textContent = (event.tokens_in || 0) + " / " + (event.tokens_out || 0);
    var error = event.error || "";
    cells[8].textContent = error.length > 120 ? error.slice(0, 119) + "…" : error;
  }
  return true;
}

var SVG_NS = "http://www.w3.org/2000/svg";

// a visit's bar on the timeline, in the chart's units (ms since its first start)
function patchBar(event, status) {
  var chart = document.querySelector("#live-run svg.timeline-svg svg.timeline-bars");
  if (!chart) return false;
  var stepSel = '[data-step="' + CSS.escape(event.step_id) + '"]';
  var link = chart.querySelector("a" + stepSel + '[data-visit="' + event.visit + '"]:not([data-child-run])');
  var at = Date.parse(event.ts);
  if (!link) {
    if (event.type !== "step.started") return true;
    var lane = document.querySelector("#live-run svg.timeline-svg g.lane:not(.child)" + stepSel + " rect.lane-bg");
    if (!lane || isNaN(at)) return false;  // a step's first visit: a lane is laid out by the server
    var kind = BAR_KINDS[event.kind] || "command";
    link = document.createElementNS(SVG_NS, "a");
    link.setAttribute("href", "/runs/" + encodeURIComponent(document.getElementById("visit-rows").dataset.run) + "/visits/" + encodeURIComponent(event.step_id) + "/" + event.visit);
    link.setAttribute("data-step", event.step_id);
    link.setAttribute("data-visit", String(event.visit));
    link.setAttribute("data-ms", "0");
    var rect = document.createElementNS(SVG_NS, "rect");
    rect.setAttribute("class", "bar k-" + kind + " s-running running" + (kind === "gate" ? " wait" : ""));
    rect.setAttribute("x", String(at - Number(chart.dataset.t0)));
    rect.setAttribute("y", String(Number(lane.getAttribute("y")) + 4));
    rect.setAttribute("width", "0");
    rect.setAttribute("height", "14");
    rect.setAttribute("data-start", String(at));
    var title = document.createElementNS(SVG_NS, "title");
    title.textContent = event.step_id + " #" + event.visit + ": running";
    rect.appendChild(title);
    link.appendChild(rect);
    chart.appendChild(link);
    return true;
  }
  var bar = link.querySelector("rect");
  if (!bar) return true;
  var cls = bar.getAttribute("class").replace(/ s-\w+/, " s-" + status);
  if (event.type === "step.finished") {
    var start = Number(bar.getAttribute("data-start"));
    if (start) bar.setAttribute("width", String(Math.max(0, at - start)));
    bar.removeAttribute("data-start");
    cls = cls.replace(/ running/, "");
    link.setAttribute("data-ms", String(event.duration_ms || 0));
  }
  bar.setAttribute("class", cls);
  return true;
}

// bars still going end at now: their widths, and the chart's scale once they pass its end
function growBars() {
  var chart = document.querySelector("svg.timeline-svg svg.timeline-bars");
  if (!chart) return;
  var now = Date.now(), t0 = Number(chart.dataset.t0), span = Number(chart.dataset.span);
  chart.querySelectorAll("rect.running[data-start]").forEach(function (bar) {
    var start = Number(bar.getAttribute("data-start"));
    bar.setAttribute("width", String(Math.max(now - start, 0)));
    bar.parentNode.setAttribute("data-ms", String(Math.max(now - start, 0)));
  });
  if (!chart.querySelector("rect.running[data-start]") || now - t0 <= span) return;
  span = now - t0;
  chart.dataset.span = String(span);
  var box = chart.getAttribute("viewBox").split(" ");
  chart.setAttribute("viewBox", "0 0 " + span + " " + box[3]);
  chart.parentNode.querySelectorAll("text.tick-label[data-k]").forEach(function (label) {
    var k = Number(label.getAttribute("data-k"));
    label.textContent = k ? "+" + fmtMs(Math.round(span * k / 6)) : "0";
  });
}

function patchRunning(event, state) {
  var p = document.getElementById("running-now");
  if (!p) return;
  var badge = p.querySelector('span[data-key="' + CSS.escape(event.step_id) + '"]');
  if (state === "running" && !badge) {
    badge = el("span", event.step_id, "badge running");
    badge.dataset.key = event.step_id;
    p.appendChild(badge);
    p.appendChild(document.createTextNode(" "));
  } else if (state !== "running" && badge) {
    p.removeChild(badge);
  }
  p.hidden = !p.querySelector("span.badge");
}

// true when the event changed nothing the page cannot patch itself (the table's rows
// are patched apart, in their own batches: see watchRun)
function patchPage(event) {
  var type = event.type;
  if (type === "step.started" || type === "step.finished") {
    var state = stateOf(event), groupSel = 'g.node[data-step="' + CSS.escape(event.step_id || "") + '"]';
    if (type === "step.started") { addTo("run-visits", 1); addTo("visits-total", 1); }
    if (type === "step.finished") {
      addTo("run-tokens-in", event.tokens_in); addTo("run-tokens-out", event.tokens_out); addTo("run-cost", event.cost_usd, 4);
    }
    patchRunning(event, state);
    // a group's child runs are listed by the server
    var group = document.querySelector("#live-run " + groupSel);
    return patchBar(event, state) && !(group && /^(sub|fan)$/.test(group.dataset.kind || ""));
  }
  // gates, the run's own status and the rest the page shows come from the server
  return !/^(gate|run|rework|retry)\./.test(type);
}

function throttled(fn, ms) {
  var timer = null;
  return function () {
    if (timer) return;
    timer = setTimeout(function () { timer = null; fn(); }, ms);
  };
}

// Events applied in batches: a batch at once after a quiet spell, then one every `ms`
// at most, so a burst costs one style, layout, paint and raster per batch, not per
// event (a frame costs a visible page 10-20 ms of CPU; fifty pages on one run, fifty
// times). The wait grows with how late the page's last timer fired (the machine is
// busy: fewer, bigger batches) up to a second, and shrinks back when it is idle.
// Timers, not animation frames: a page the browser deems occluded still follows its
// run. A hidden page applies nothing until it is shown; if it missed more than `most`
// events it takes the server's fragment then.
function batcher(ms, most, apply, resync) {
  var queued = [], timer = null, last = 0, due = 0, wait = ms, missed = false;
  function flush() {
    timer = null;
    if (document.hidden) return;
    last = Date.now();
    wait = Math.min(1000, Math.max(ms, (wait + 4 * (last - due)) / 2));
    var batch = queued, whole = missed;
    queued = []; missed = false;
    if (whole) resync(); else apply(batch);
  }
  function schedule() {
    if (timer || document.hidden || !(queued.length || missed)) return;
    var after = Math.max(0, last + wait - Date.now());
    due = Date.now() + after;
    timer = setTimeout(flush, after);
  }
  document.addEventListener("visibilitychange", schedule);
  return function (event) {
    queued.push(event);
    if (queued.length > most) { queued.shift(); missed = true; }
    schedule();
  };
}

var BATCH_MS = 50, ROWS_MS = 1000;

function watchRun(url) {
  var log = document.getElementById("event-log");
  var box = document.getElementById("live-run");
  // what the page cannot patch itself comes with the server's fragment, at most every 2 s
  var update = throttled(function () { refresh(box, function () { watchChildren(update); }); }, 2000);
  var patch = batcher(BATCH_MS, 500, function (batch) {
    var whole = false;
    // a step's graph node shows its newest state: one patch per step a batch moved
    var newest = {};
    batch.forEach(function (event) {
      if (stateOf(event) && event.step_id) newest[event.step_id] = event;
      if (!patchPage(event)) whole = true;
    });
    Object.keys(newest).forEach(function (step) { applyEvent(newest[step]); });
    if (whole) update();
  }, update);
  // a row per visit: adding rows shifts the table below them, the dearest paint the
  // page has; once a second is soon enough for a table
  var rows = batcher(ROWS_MS, 500, function (batch) {
    var whole = false;
    batch.forEach(function (event) { if (!patchRow(event, stateOf(event))) whole = true; });
    if (whole) update();
  }, update);
  watchChildren(update);
  // EventSource sends Last-Event-ID itself when it reconnects: no event is lost
  followRun(url, function (events) {
    if (log) logLines(log, events);
    events.forEach(function (event) {
      patch(event);
      if (event.type === "step.started" || event.type === "step.finished") rows(event);
    });
  }, function () { refresh(box); });
}

// a batch's lines added to the event log in one DOM operation; the log keeps the
// newest LOG_ROWS (all of them: the link below it). It sits in a closed <details>,
// and is out of layout while off screen (content-visibility in style.css)
var LOG_ROWS = 200;

function logLines(log, events) {
  var lines = document.createDocumentFragment();
  events.forEach(function (event) {
    var what = "#" + event.seq + " " + event.type;
    if (event.step_id) what += " " + event.step_id + (event.visit ? " #" + event.visit : "");
    lines.appendChild(el("li", what));
  });
  log.appendChild(lines);
  var extra = log.childElementCount - LOG_ROWS;
  if (extra > 0) {
    var range = document.createRange();
    range.setStartBefore(log.firstElementChild);
    range.setEndAfter(log.children[extra - 1]);
    range.deleteContents();
  }
}

function watchRuns(url) {
  var box = document.getElementById("live-table");
  var update = throttled(function () { refresh(box); }, 1000);
  follow(url, ["runs"], update);
}

// a running visit's output: text appended as it is stored (textContent: never markup)
function watchOutput(pre) {
  var last = Number(new URL(pre.dataset.liveOutput, location.href).searchParams.get("after")) || 0;
  var stop = follow(pre.dataset.liveOutput, ["output", "end"], function (name, data, id) {
    if (name === "end") { stop(); return; }
    if (Number(id) <= last) return;  // sent again by the shared stream
    last = Number(id);
    pre.textContent += JSON.parse(data).text;
    if (pre.textContent.length > 400000) pre.textContent = pre.textContent.slice(-200000);
  });
}

// relative times ("3 min ago"), the exact time in the reader's zone on hover
function ago(date) {
  var s = Math.round((Date.now() - date.getTime()) / 1000), future = s < 0;
  s = Math.abs(s);
  if (s < 45) return future ? "in a moment" : "just now";
  var units = [[31536000, "y"], [2592000, "mo"], [86400, "d"], [3600, "h"], [60, "min"]];
  for (var i = 0; i < units.length; i++) {
    if (s >= units[i][0]) {
      var n = Math.round(s / units[i][0]);
      return future ? "in " + n + " " + units[i][1] : n + " " + units[i][1] + " ago";
    }
  }
  return "just now";
}

var exactFormat = null;  // one formatter for every time (making one is the slow part)

function relativeTimes(root) {
  if (!exactFormat) exactFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
  (root || document).querySelectorAll("time[datetime]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (isNaN(d)) return;
    t.textContent = ago(d);
    if (!t.dataset.exact) {
      t.dataset.exact = "1";
      t.title = exactFormat.format(d) + " (" + t.title + ")";
    }
  });
}

// durations of what is still going (a run, a visit, a gate waiting) count on by themselves
function fmtMs(ms) {
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  var s = Math.floor(ms / 1000);
  if (s < 3600) return Math.floor(s / 60) + " min " + String(s % 60).padStart(2, "0") + " s";
  return Math.floor(s / 3600) + " h " + String(Math.floor(s % 3600 / 60)).padStart(2, "0") + " min";
}

function tick() {
  growBars();
  document.querySelectorAll("[data-since]").forEach(function (el) {
    var start = Date.parse(el.dataset.since);
    if (!isNaN(start)) el.textContent = fmtMs(Math.max(0, Date.now() - start));
  });
}

// "/" focuses the page's search box, as on most sites
function shortcuts() {
  document.addEventListener("keydown", function (e) {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = (document.activeElement && document.activeElement.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
    var box = document.querySelector("input[type=search]");
    if (box) { e.preventDefault(); box.focus(); }
  });
}

document.addEventListener("DOMContentLoaded", function () {
  var body = document.body;
  relativeTimes();
  setInterval(relativeTimes, 30000);
  if (document.querySelector("[data-since]") || body.dataset.liveRun) { tick(); setInterval(tick, 1000); }
  shortcuts();
  var pre = document.getElementById("live-output");
  if (pre && pre.dataset.liveOutput) watchOutput(pre);
  if (body.dataset.liveRun && !body.dataset.final) watchRun(body.dataset.liveRun);
  if (body.dataset.liveRuns) watchRuns(body.dataset.liveRuns);
});
