"""What reading a big run's events costs the dashboard.

Builds (through the store's writer API, as the run loop writes) a run of 21,000
events (the loop pipeline of store_lib, 5,250 visits), starts `swell serve` on it
and times, over HTTP:

- `/api/runs/RUN/events?after=0` (its first 1,000 events), median of several, against
  the same page at the run's end (`after=LAST-1000`): a store that pages in SQL reads
  1,000 events either way (ratio near 1); one that reads everything and slices pays
  for the whole run at `after=0`. Goal: < 100 ms.
- `/api/runs` while 20 SSE clients stream the run from `after=0`, against `/api/runs`
  alone: each stream sends bounded batches, so the list stays quick while they run.
  Goal: < 1 s for the list under that load (before: 16.7 s).
- one client's whole stream from `after=0` to its `end` event, for context.

The 20 streams are cancelled once the list was timed three times; the one stream is
given 120 s.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from store_lib import loop_batches, verdict, write_project

from swell.store.location import open_store

ITERATIONS = 1_750  # 3 visits each, 4 events a visit: about 21,000 events
CLIENTS = 20
SAMPLES = 7
STREAM_SECONDS = 600.0
RUN = "loop-20261127-000000-events"


def build(root: Path) -> int:
    write_project(root, ITERATIONS)
    store = open_store(root / ".swell" / "state.db")
    store.create_run(run_id=RUN, pipeline="loop", input_text="", workspace=str(root))
    for batch in loop_batches(RUN, 3 * ITERATIONS, ITERATIONS, workspace=str(root)):
        store.emit(batch)
    last = store.get_run(RUN).last_seq
    store.close()
    return last


async def timed(http: httpx.AsyncClient, url: str) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = await http.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return (time.perf_counter() - start) * 1000, response


async def median(http: httpx.AsyncClient, url: str) -> float:
    await timed(http, url)  # warm
    return statistics.median([(await timed(http, url))[0] for _ in range(SAMPLES)])


async def follow(http: httpx.AsyncClient, url: str, frames: list[int]) -> None:
    """Read a stream to its end, counting its frames."""
    async with http.stream("GET", url) as response:
        async for line in response.aiter_lines():
            if line.startswith("event: swell"):
                frames[0] += 1
            if line.startswith("event: end"):
                return


def serve(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`swell serve` on the project, as a user starts it: one process, uvicorn."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "swell", "serve", "--port", str(port)],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/api/runs", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("swell serve did not start")


async def measure(url: str, last: int) -> dict[str, float]:
    out: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=url, timeout=STREAM_SECONDS) as http:
        out["first page"] = await median(http, f"/api/runs/{RUN}/events?after=0")
        out["last page"] = await median(http, f"/api/runs/{RUN}/events?after={last - 1000}")
        out["runs alone"] = await median(http, "/api/runs")
        for name in ("first page", "last page", "runs alone"):
            print(f"  {out[name]:9.1f} ms  {name}", flush=True)
        frames = [0]
        start = time.perf_counter()
        try:
            await asyncio.wait_for(follow(http, f"/api/runs/{RUN}/stream?after=0", frames), 120)
            out["one stream"] = (time.perf_counter() - start) * 1000
            print(f"  {out['one stream']:9.1f} ms  one stream, after=0 to its end", flush=True)
            assert frames[0] == last, "the stream lost events"
        except TimeoutError:
            print(f"  one stream sent {frames[0]:,} of {last:,} events in 120 s", flush=True)
    limits = httpx.Limits(max_connections=CLIENTS + 5)
    async with httpx.AsyncClient(base_url=url, timeout=STREAM_SECONDS, limits=limits) as http:
        counts = [[0] for _ in range(CLIENTS)]
        streams = [
            asyncio.create_task(follow(http, f"/api/runs/{RUN}/stream?after=0", c)) for c in counts
        ]
        await asyncio.sleep(1.0)  # the streams are under way
        loaded = []
        while not all(s.done() for s in streams) and len(loaded) < 3:
            loaded.append((await timed(http, "/api/runs"))[0])
            print(f"  {loaded[-1]:9.1f} ms  /api/runs under {CLIENTS} streams", flush=True)
        out["runs under streams"] = max(loaded) if loaded else 0.0
        for s in streams:  # a store that reads every event at each poll takes an hour
            s.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
    return out


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="swell-events-bench-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        last = build(root)
        print(f"built a run of {last:,} events in {time.perf_counter() - start:.1f} s")
        proc, url = serve(root)
        try:
            found = asyncio.run(measure(url, last))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    first, ratio = found["first page"], found["first page"] / found["last page"]
    print(
        f"events?after=0 of {last:,}: {first:.1f} ms, {ratio:.2f}x the last page "
        f"(goal < 100 ms)  {verdict(first < 100)}"
    )
    busy = found["runs under streams"]
    print(
        f"/api/runs under {CLIENTS} streams from after=0: {busy:.1f} ms (slowest), "
        f"{busy / found['runs alone']:.1f}x alone (goal < 1000 ms)  {verdict(busy < 1000)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
