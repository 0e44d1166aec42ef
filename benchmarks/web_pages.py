"""How long the dashboard's busiest pages take on the server, on big stores.

Builds (through the store's writer API, as the run loop writes) one state database
holding a run of 10,000 visits (the loop pipeline of store_lib, 3,334 iterations) and
10,000 small runs beside it, then serves the app in process (httpx's ASGI transport,
no network) and times, median of several requests each:

- the run page (`/runs/RUN`, HTML: graph, steps, first page of visits, gates, ...),
  goal < 100 ms;
- the runs page (`/`, HTML: the newest 50 runs of 10,000, with their totals),
  goal < 150 ms;
- their JSON twins, and a filtered runs page, for context;
- in Debian's chromium (Playwright, `swell serve`'s app on a loopback port), with the
  Performance API: the run page of the 10,000-visit run and the timeline page of a
  1,000-visit run, from the response's first byte to the first frame after `load`
  (the browser's own work: parse, style, layout, scripts), goal < 300 ms each; the
  time to the first byte (the server) is printed beside it.

It prints the query plans of the paged queries (EXPLAIN QUERY PLAN): every one
should search an index, none scan a table.

Each figure is printed with a baseline measured in the same run, and its ratio to it,
so runs on a loaded machine can be compared: on the server the smallest request the
app answers (`/healthz`), in the browser the same page's first byte-to-frame time of
that request. The goals are absolute; the ratios say what a busy machine hid.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from store_lib import loop_batches, verdict, write_project

from swell.events import models as ev
from swell.store.location import open_store

VISITS = 10_000
RUNS = 10_000
SAMPLES = 15
RUN = "loop-20261124-000000-bench"
RUN_1K = "loop-20261124-000001-bench1k"  # 1,000 visits: the timeline page's
BROWSER_SAMPLES = 7
BASELINE = "/healthz"  # the smallest request: what the machine's load costs any page


def build(root: Path) -> None:
    write_project(root, VISITS // 3 + 1)
    store = open_store(root / ".swell" / "state.db")
    pipeline = (root / ".agents" / "pipelines" / "loop.yaml").read_text()
    store.create_run(
        run_id=RUN, pipeline="loop", input_text="", workspace=str(root), pipeline_text=pipeline
    )
    for batch in loop_batches(RUN, VISITS, VISITS // 3 + 1, workspace=str(root)):
        store.emit(batch)
    store.create_run(
        run_id=RUN_1K, pipeline="loop", input_text="", workspace=str(root), pipeline_text=pipeline
    )
    for batch in loop_batches(RUN_1K, 1_000, 1_000 // 3 + 1, workspace=str(root)):
        store.emit(batch)
    for n in range(RUNS):
        run_id = f"small-20261124-{n:06d}"
        store.create_run(run_id=run_id, pipeline=f"p{n % 7}", input_text="x", workspace="/ws")
        stamp = f"2026-11-24T01:{n // 6000 % 60:02d}:{n // 100 % 60:02d}.{n % 1000:03d}Z"
        batch: list[ev.BaseEvent] = [
            ev.RunStarted(pipeline=f"p{n % 7}", workspace="/ws"),
            ev.StepStarted(step_id="s", visit=1, kind="command"),
            ev.StepFinished(step_id="s", visit=1, outcome="success", tokens_in=10, cost_usd=0.01),
            ev.RunFinished(status="succeeded", visits=1, duration_ms=5),
        ]
        for seq, event in enumerate(batch, 1):
            event.run_id, event.seq, event.ts = run_id, seq, stamp
        store.emit(batch)
    store.close()


async def timings(root: Path, urls: list[str]) -> dict[str, float]:
    from swell.web.app import create_app
    from swell.web.state import ServeSettings

    app = create_app(ServeSettings(root=root))
    out = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        for url in urls:
            assert (await http.get(url)).status_code == 200, url  # warm
            samples = []
            for _ in range(SAMPLES):
                start = time.perf_counter()
                response = await http.get(url)
                samples.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200
            out[url] = statistics.median(samples)
    return out


# from the response's first byte to the first frame after `load`, and to the first byte
MEASURE = """() => new Promise(done => {
  const nav = performance.getEntriesByType("navigation")[0];
  const finish = () => requestAnimationFrame(() => setTimeout(() => done({
    render: performance.now() - nav.responseStart,
    ttfb: nav.responseStart - nav.startTime,
  }), 0));
  if (document.readyState === "complete") finish(); else addEventListener("load", finish);
})"""


def browser_timings(root: Path, urls: list[str]) -> dict[str, tuple[float, float]] | None:
    """Median (render, first byte) in ms of each page in chromium; None without it."""
    import socket
    import threading

    try:
        import uvicorn
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    from swell.adapters.browser import find_chromium
    from swell.web.app import create_app
    from swell.web.state import ServeSettings

    try:
        chromium = find_chromium(None, root)
    except Exception:
        return None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    app = create_app(ServeSettings(root=root))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    out: dict[str, tuple[float, float]] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            for url in urls:
                page.goto(f"http://127.0.0.1:{port}{url}")  # warm
                renders, firsts = [], []
                for _ in range(BROWSER_SAMPLES):
                    page.goto(f"http://127.0.0.1:{port}{url}")
                    found = page.evaluate(MEASURE)
                    renders.append(found["render"])
                    firsts.append(found["ttfb"])
                out[url] = (statistics.median(renders), statistics.median(firsts))
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    return out


def plans(db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    queries = {
        "runs page": "SELECT id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 50",
        "runs page, one pipeline": "SELECT id FROM runs WHERE pipeline = 'p3' "
        "ORDER BY created_at DESC, rowid DESC LIMIT 50",
        "totals of a page": "SELECT run_id, SUM(tokens_in) FROM visits WHERE run_id IN ('a','b') "
        "GROUP BY run_id",
        "children of a page": "SELECT parent_run_id, COUNT(*) FROM runs "
        "WHERE parent_run_id IN ('a') GROUP BY parent_run_id",
        "visits page": "SELECT step_id FROM visits WHERE run_id = 'x' "
        "ORDER BY started_at DESC, step_id DESC, visit DESC LIMIT 50",
        "one visit": "SELECT step_id FROM visits WHERE run_id = 'x' AND step_id = 's' AND visit = 1",
    }
    for name, sql in queries.items():
        plan = "; ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
        print(f"  plan  {name:26} {plan}")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="swell-web-bench-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        build(root)
        print(
            f"built {VISITS:,}-visit run and {RUNS:,} runs in {time.perf_counter() - start:.1f} s"
        )
        urls = [
            f"/runs/{RUN}",
            "/",
            f"/api/runs/{RUN}",
            "/api/runs",
            "/?pipeline=p3&page=20",
            f"/runs/{RUN_1K}/timeline",
            BASELINE,
        ]
        found = asyncio.run(timings(root, urls))
        base = found[BASELINE]
        print(f"  load average {os.getloadavg()[0]:.1f}; baseline {BASELINE} {base:.1f} ms")
        for url, ms in found.items():
            print(f"  {ms:7.1f} ms  {ms / base:5.1f}x baseline  {url}")
        plans(root / ".swell" / "state.db")
        run_ms, runs_ms = found[f"/runs/{RUN}"], found["/"]
        print(
            f"run page, {VISITS:,} visits: {run_ms:.1f} ms, {run_ms / base:.1f}x baseline "
            f"(goal < 100)  {verdict(run_ms < 100)}"
        )
        print(
            f"runs page, {RUNS:,} runs: {runs_ms:.1f} ms, {runs_ms / base:.1f}x baseline "
            f"(goal < 150)  {verdict(runs_ms < 150)}"
        )
        timeline_ms = found[f"/runs/{RUN_1K}/timeline"]
        print(
            f"timeline page, 1,000 visits, server: {timeline_ms:.1f} ms, "
            f"{timeline_ms / base:.1f}x baseline (goal < 100)  "
            f"{verdict(timeline_ms < 100)}"
        )
        pages = {
            "run page, 10,000 visits": f"/runs/{RUN}",
            "timeline, 1,000 visits": f"/runs/{RUN_1K}/timeline",
        }
        seen = browser_timings(root, [*pages.values(), BASELINE])
        if seen is None:
            print("browser: chromium or playwright is missing, not measured")
            return 0
        floor = seen[BASELINE][0]
        print(f"browser baseline ({BASELINE}): {floor:.1f} ms render")
        for name, url in pages.items():
            render, first = seen[url]
            print(
                f"{name}, browser: {render:.1f} ms render, {render / floor:.1f}x baseline, "
                f"first byte {first:.1f} ms (goal render < 300)  {verdict(render < 300)}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
