// swell dashboard: one live stream per browser for all its tabs (a SharedWorker).
// A page asks to follow a stream (its URL without `after`, and the seq or id it has
// seen); the worker opens one EventSource per stream for every tab that follows it,
// and posts each message to them all. It keeps the stream's newest messages, so a
// tab that comes later gets what it has not seen yet; a tab that needs older ones
// than kept is told `gap` and opens a stream of its own. The last tab to leave a
// stream closes it. Without it, a browser opens at most six connections to a host:
// a seventh tab's stream would wait.
"use strict";

var KEEP = 2000;  // messages kept per stream for tabs that come later
var streams = {};

function open(key, after, names) {
  var s = streams[key] = { ports: [], kept: [], floor: after, source: null };
  var url = key + (key.indexOf("?") < 0 ? "?" : "&") + "after=" + after;
  s.source = new EventSource(url, { withCredentials: true });
  names.forEach(function (name) {
    s.source.addEventListener(name, function (msg) {
      var m = { key: key, event: name, data: msg.data, id: msg.lastEventId };
      if (/^\d+$/.test(m.id)) {
        s.kept.push(m);
        if (s.kept.length > KEEP) s.floor = Number(s.kept.shift().id);
      }
      s.ports.forEach(function (port) { port.postMessage(m); });
      if (name === "end") close(key);
    });
  });
  return s;
}

function close(key) {
  var s = streams[key];
  if (!s) return;
  s.source.close();
  delete streams[key];
}

function follow(port, key, after, names) {
  var s = streams[key];
  if (s && after < s.floor) { port.postMessage({ key: key, event: "gap" }); return; }
  if (!s) s = open(key, after, names);
  s.kept.forEach(function (m) { if (Number(m.id) > after) port.postMessage(m); });
  if (s.ports.indexOf(port) < 0) s.ports.push(port);
}

function leave(port, key) {
  var s = streams[key];
  if (!s) return;
  s.ports = s.ports.filter(function (p) { return p !== port; });
  if (!s.ports.length) close(key);
}

self.onconnect = function (e) {
  var port = e.ports[0];
  port.onmessage = function (msg) {
    var m = msg.data;
    if (m.op === "follow") follow(port, m.key, Number(m.after) || 0, m.names);
    else if (m.op === "leave") leave(port, m.key);
    else if (m.op === "bye") Object.keys(streams).forEach(function (key) { leave(port, key); });
  };
  port.start();
};
