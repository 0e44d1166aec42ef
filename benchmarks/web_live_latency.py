"""From an event's commit to the browser's DOM: how live is `swell serve`'s run page?

A real `swell serve` (uvicorn on 127.0.0.1) and Debian's chromium (through Playwright)
open the page of a running run. This process then commits events to the run's store,
one batch at a time, 20 to 120 ms apart, as another terminal's `swell run` would, and
notes when each commit returned. A MutationObserver in the page notes when each
event's line appears in the page's event log. Latency = DOM time - commit time (one
machine, one clock).

The event line is the page's first mark of an event; the run's visit count in the
header (a batch of visible patches, web/static/app.js) is timed too.

Goal (issue 13, issue 32): p95 under 150 ms with 50 pages open on the run
(LIVE_BENCH_PAGES, each in a browser context of its own: a browser opens at most six
connections to one host, and every page holds a stream). LIVE_BENCH_READERS=N adds N
viewers whose browsers are elsewhere: each a connection of its own reading the run's
stream as a page does, timed from commit to received. The baseline is the page's
own round trip: a `fetch` of the run's JSON from the page, timed in the browser; the
ratio says how many such round trips an event's way to the page costs.
"""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from live_trace import CATEGORIES, summary
from store_lib import PYTHON, verdict, write_project

from swell.adapters.browser import find_chromium
from swell.events import models as ev
from swell.store.location import open_store

EVENTS = int(os.environ.get("LIVE_BENCH_EVENTS", "80"))
PAGES = int(os.environ.get("LIVE_BENCH_PAGES", "50"))
# every page in one browser context (one user's tabs, which share one stream through
# the dashboard's SharedWorker), not each in its own (many users)
SHARED = os.environ.get("LIVE_BENCH_SHARED", "") == "1"
# events the page shows only as log lines (an agent's text): what a page's stream
# costs it, every visible patch aside
QUIET = os.environ.get("LIVE_BENCH_QUIET", "") == "1"
# a file for a chromium trace of page 1 while the events come, and where its CPU went
TRACE = os.environ.get("LIVE_BENCH_TRACE", "")
# other viewers, each its own connection reading the run's stream as a page does (the
# same URL and bytes), in one process: many users, each on a machine of their own,
# whose browsers' drawing does not share this machine's two cores with the pages here
READERS = int(os.environ.get("LIVE_BENCH_READERS", "0"))
READER = """
import asyncio, json, sys, time
import httpx

from pathlib import Path

url, count, target, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ready = Path(out + ".ready")

async def read(client, seen):
    async with client.stream("GET", url, timeout=None) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ["):
                now = time.time() * 1000
                for event in json.loads(line[6:]):
                    seen.setdefault(str(event["seq"]), now)
                if all(seen_by_all) and not ready.exists():
                    ready.touch()  # every viewer has the run's start: events may come
                if target in seen:
                    return

seen_by_all = [{} for _ in range(count)]  # per viewer: seq -> ms it was received

async def main():
    limits = httpx.Limits(max_connections=count + 1)
    async with httpx.AsyncClient(limits=limits) as client:
        await asyncio.wait_for(asyncio.gather(*(read(client, s) for s in seen_by_all)), 180)
    with open(out, "w") as f:
        json.dump(seen_by_all, f)

asyncio.run(main())
"""
GOAL_MS = 150.0
RUN = "live-20261124-000000-bench"
OBSERVER = """
// the observers watch only the two elements they time: observing the whole document
// cost each page about 1.7 ms per event (a chromium trace), more than the page's own
// handling of the event's message
window.__seen = {};
window.__shown = {};
var shownUpTo = 0;
document.addEventListener("DOMContentLoaded", function () {
  new MutationObserver(function (changes) {
    var now = Date.now();
    changes.forEach(function (c) {
      c.addedNodes.forEach(function (n) {
        var m = /^#(\\d+) /.exec(n.textContent || "");
        if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = now;
      });
    });
  }).observe(document.getElementById("event-log"), { childList: true });
  // what a reader sees: the run's visit count (the header's), once it shows visit n
  var count = document.getElementById("run-visits");
  new MutationObserver(function () {
    var now = Date.now(), n = Number(count.textContent);
    for (; shownUpTo < n; shownUpTo++) window.__shown[shownUpTo + 1] = now;
  }).observe(count, { childList: true, subtree: true, characterData: true });
});
"""
DIAGNOSE = """() => [document.visibilityState, document.hasFocus(),
  typeof following === "object" ? Object.keys(following) : "no shared worker",
  document.getElementById("event-log").childElementCount]"""
ROUND_TRIP = """async (url) => {
  const times = [];
  for (let i = 0; i < 15; i++) {
    const t = performance.now();
    await (await fetch(url)).text();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _chromium() -> str:
    found = find_chromium(None, Path("."))
    if found is None:
        raise SystemExit("FAILED: chromium is not installed (apt-get install chromium)")
    return found


def _serve(root: Path, port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "SWELL_STORE")}
    proc = subprocess.Popen(
        [PYTHON, "-m", "swell", "serve", "--port", str(port)],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120  # a loaded machine starts it slowly
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("FAILED: swell serve did not start")


METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def _metrics(session: Any) -> dict[str, float]:
    """The page's main-thread seconds so far (Chrome DevTools Protocol)."""
    found = session.send("Performance.getMetrics")["metrics"]
    return {m["name"]: float(m["value"]) for m in found if m["name"] in METRICS}


def _cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    """The processes under `pid` (Playwright's driver, chromium and its renderers)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int(
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], [pid]
    while todo:
        kids = [p for p, pp in parent.items() if pp == todo[-1]]
        todo.pop()
        found += kids
        todo += kids
    return found


def _browser_cpu(server: int) -> float:
    """CPU seconds the browser's processes used so far (the server's excluded): a
    figure the machine's other load does not inflate, as it does the pages' task times."""
    total = 0.0
    for pid in _descendants(os.getpid()):
        if pid != server:
            try:
                total += _cpu_seconds(pid)
            except (OSError, IndexError):
                continue
    return total


def _readers(port: int, out: Path) -> subprocess.Popen[bytes] | None:
    """READERS other viewers on the run's stream, until each has seen the last event."""
    if not READERS:
        return None
    url = f"http://127.0.0.1:{port}/api/runs/{RUN}/stream?after=0&batch=1"
    target = str(EVENTS + 1)  # seq 1 started the run
    readers = subprocess.Popen([PYTHON, "-c", READER, url, str(READERS), target, str(out)])
    deadline = time.monotonic() + 120
    while not Path(f"{out}.ready").exists():
        if readers.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("FAILED: the other viewers' streams did not open")
        time.sleep(0.05)
    return readers


def measure(
    root: Path,
) -> tuple[list[float], list[float], float, dict[str, float], list[float]]:
    from playwright.sync_api import sync_playwright

    write_project(root, 3)
    store = open_store(root / ".swell" / "state.db")
    store.create_run(run_id=RUN, pipeline="loop", input_text="", workspace=str(root))
    seq = 0

    def commit(*events: ev.BaseEvent) -> float:
        nonlocal seq
        for event in events:
            seq += 1
            event.run_id, event.seq, event.ts = RUN, seq, ev.now_iso()
        store.emit(list(events))
        return time.time() * 1000

    commit(ev.RunStarted(pipeline="loop"))
    port = _free_port()
    server = _serve(root, port)
    committed: dict[int, float] = {}
    streamed: list[float] = []  # the other viewers' commit -> received
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
            pages = []
            shared = browser.new_context() if SHARED else None
            for _ in range(PAGES):
                page = (shared or browser.new_context()).new_page()
                page.add_init_script(OBSERVER)
                # a loaded machine opening fifty pages may take a while for each
                page.goto(f"http://127.0.0.1:{port}/runs/{RUN}", timeout=180_000)
                pages.append(page)
            sessions = [page.context.new_cdp_session(page) for page in pages]
            for session in sessions:
                session.send("Performance.enable")
            base = float(pages[0].evaluate(ROUND_TRIP, f"/api/runs/{RUN}"))
            readers = _readers(port, root / "readers.json")
            time.sleep(1.0)  # the streams are open and have sent what was stored
            before = [_metrics(s) for s in sessions]
            cpu = _cpu_seconds(server.pid)
            browser_cpu = _browser_cpu(server.pid)
            trace = Path(TRACE)
            if TRACE:
                browser.start_tracing(page=pages[0], path=trace, categories=CATEGORIES)
            rng = random.Random(7)
            for visit in range(1, EVENTS + 1):
                if QUIET:
                    event: ev.BaseEvent = ev.AgentText(step_id="s", visit=1, text="thinking")
                else:
                    event = ev.StepStarted(step_id="s", visit=visit, kind="command")
                at = commit(event)
                committed[seq] = at
                time.sleep(rng.uniform(0.02, 0.12))
            deadline = time.monotonic() + 120  # a loaded machine starves some pages for long
            seen: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                seen = [page.evaluate("window.__seen") for page in pages]
                if all(str(s) in found for found in seen for s in committed):
                    break
                time.sleep(0.2)
            after = [_metrics(s) for s in sessions]
            for i, found in enumerate(seen):  # a page that missed events: its state
                if any(str(s) not in found for s in committed):
                    print(f"  page {i} missed events; it says: {pages[i].evaluate(DIAGNOSE)}")
            if TRACE:
                browser.stop_tracing()
                print("\n".join(summary(trace, EVENTS, PAGES)))
            shown = [page.evaluate("window.__shown") for page in pages]
            if readers is not None:
                readers.wait(timeout=180)
                seen_by_readers = json.loads((root / "readers.json").read_text())
                streamed = [
                    float(f[str(s)]) - t for f in seen_by_readers for s, t in committed.items()
                ]
            server_ms = (_cpu_seconds(server.pid) - cpu) * 1000 / EVENTS
            browser_ms = (_browser_cpu(server.pid) - browser_cpu) * 1000 / EVENTS / PAGES
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
        store.close()
    missing = [s for found in seen for s in committed if str(s) not in found]
    if missing:
        short = [i for i, found in enumerate(seen) if any(str(s) not in found for s in committed)]
        raise SystemExit(
            f"FAILED: {len(missing)} events never reached a page: {missing[:5]}, "
            f"pages {short[:10]} of {len(seen)} (the newest each saw: "
            f"{[max(map(int, seen[i]), default=0) for i in short[:10]]})"
        )
    # each page's own main-thread work per event, in ms (the mean over the pages)
    work = {
        name: sum(a[name] - b[name] for a, b in zip(after, before, strict=True))
        * 1000
        / len(pages)
        / EVENTS
        for name in METRICS
    }
    work["browser CPU per page"] = browser_ms
    work["server CPU"] = server_ms
    latencies = [float(found[str(s)]) - t for found in seen for s, t in committed.items()]
    # visit v's event is seq v + 1 (seq 1 started the run)
    visible = [
        float(found[str(s - 1)]) - t
        for found in shown
        for s, t in committed.items()
        if str(s - 1) in found
    ]
    return latencies, visible, base, work, streamed


def main() -> int:
    print(
        f"live latency: {EVENTS} events committed to a running run, "
        f"{PAGES} chromium pages on the run page"
        f"{f' and {READERS} other viewers reading its stream' if READERS else ''}"
        f"{' (one browser context)' if SHARED else ''}{', agent text only' if QUIET else ''}"
        f" (load average {os.getloadavg()[0]:.1f})"
    )
    with tempfile.TemporaryDirectory(prefix="swell-live-") as tmp:
        latencies, visible, base, work, streamed = measure(Path(tmp))
    latencies.sort()
    p50 = statistics.median(latencies)
    p95 = latencies[int(len(latencies) * 0.95) - 1]
    print(f"  page round trip (fetch of the run's JSON, median): {base:.1f} ms")
    print(
        "  each page's main-thread work per event: "
        + ", ".join(f"{name.removesuffix('Duration')} {ms:.1f} ms" for name, ms in work.items())
    )
    if visible:
        visible.sort()
        print(
            f"  commit -> visit count shown: p50 {statistics.median(visible):.0f} ms, "
            f"p95 {visible[int(len(visible) * 0.95) - 1]:.0f} ms ({len(visible)} of "
            f"{len(latencies)} seen)"
        )
    if streamed:
        streamed.sort()
        print(
            f"  commit -> received by the {READERS} other viewers: p50 "
            f"{statistics.median(streamed):.0f} ms, p95 "
            f"{streamed[int(len(streamed) * 0.95) - 1]:.0f} ms, max {streamed[-1]:.0f} ms"
        )
    print(f"  commit -> DOM: p50 {p50:.0f} ms, max {latencies[-1]:.0f} ms")
    print(
        f"  commit -> DOM p95: {p95:.0f} ms ({p95 / base:.1f}x the round trip)"
        f"  goal < {GOAL_MS:.0f} ms  {verdict(p95 < GOAL_MS)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
