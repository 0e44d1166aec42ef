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

// the child runs still going that a group shows get streams of their own (three at
// most: a browser opens six connections to a host, and the page needs its fetches)
var childStreams = {}, childrenDone = {};

function watchChildren(update) {
  document.querySelectorAll("#live-run a[data-child-run][data-live]").forEach(function (a) {
    var id = a.dataset.childRun;
    if (childStreams[id] || childrenDone[id] || Object.keys(childStreams).length >= 3) return;
    var source = childStreams[id] = new EventSource("/api/runs/" + encodeURIComponent(id) + "/stream", { withCredentials: true });
    source.addEventListener("swell", function (msg) { applyChildEvent(id, JSON.parse(msg.data)); update(); });
    source.addEventListener("end", function () {
      source.close(); delete childStreams[id]; childrenDone[id] = 1; update();
    });
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
  if (event.type === "step.started") {
    var count = document.getElementById("run-visits");
    if (count) count.textContent = String((Number(count.textContent) || 0) + 1);
  }
}

function throttled(fn, ms) {
  var timer = null;
  return function () {
    if (timer) return;
    timer = setTimeout(function () { timer = null; fn(); }, ms);
  };
}

function watchRun(url) {
  var log = document.getElementById("event-log");
  var box = document.getElementById("live-run");
  // the stream patches states and counts at once; the fragment (new bars and rows) follows
  // at most every 1.5 s, so fifty open pages do not each redraw the run page per event
  var update = throttled(function () { refresh(box, function () { watchChildren(update); }); }, 1500);
  watchChildren(update);
  // EventSource sends Last-Event-ID itself when it reconnects: no event is lost
  var source = new EventSource(url, { withCredentials: true });
  source.addEventListener("swell", function (msg) {
    var event = JSON.parse(msg.data);
    if (log) {
      var item = document.createElement("li");
      var what = "#" + event.seq + " " + event.type;
      if (event.step_id) what += " " + event.step_id + (event.visit ? " #" + event.visit : "");
      item.textContent = what;
      log.appendChild(item);
      while (log.childNodes.length > 500) log.removeChild(log.firstChild);
    }
    applyEvent(event);
    update();
  });
  source.addEventListener("end", function () { source.close(); refresh(box); });
}

function watchRuns(url) {
  var box = document.getElementById("live-table");
  var update = throttled(function () { refresh(box); }, 1000);
  var source = new EventSource(url, { withCredentials: true });
  source.addEventListener("runs", update);
}

// a running visit's output: text appended as it is stored (textContent: never markup)
function watchOutput(pre) {
  var source = new EventSource(pre.dataset.liveOutput, { withCredentials: true });
  source.addEventListener("output", function (msg) {
    pre.textContent += JSON.parse(msg.data).text;
    if (pre.textContent.length > 400000) pre.textContent = pre.textContent.slice(-200000);
  });
  source.addEventListener("end", function () { source.close(); });
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
  if (document.querySelector("[data-since]") || body.dataset.liveRun) setInterval(tick, 1000);
  shortcuts();
  var pre = document.getElementById("live-output");
  if (pre && pre.dataset.liveOutput) watchOutput(pre);
  if (body.dataset.liveRun && !body.dataset.final) watchRun(body.dataset.liveRun);
  if (body.dataset.liveRuns) watchRuns(body.dataset.liveRuns);
});
