"""Many viewers of one run: what `swell serve`'s live streams cost as clients add up.

A real `swell serve` (uvicorn) on a SQLite store that holds a running run of 10,000
visits (about 40,000 events, the loop pipeline of store_lib) and a live run this
process commits to while it is measured. The clients are plain HTTP SSE clients (an
asyncio connection each, reading the chunked stream), not browsers; the server's CPU
is read from /proc/PID/stat (user + system) over each measurement.

- **live**: 50 clients on the live run; this process commits a visit (2 events) every
  20-120 ms, FANOUT_EVENTS times, and notes when each commit returned; each client
  notes when each event arrived. Latency = arrival - commit (one machine, one clock).
  Goals: p95 <= 150 ms, server CPU <= 15% of a core.
- **idle**: 50 clients on the 10,000-visit run, which is running but gets no events
  (each joined at its newest seq, as the run page does), for IDLE_SECONDS.
  Goal: server CPU <= 5% of a core.
- **catch-up**: one client reads the 10,000-visit run's stream from its start to its
  newest event. Goal: >= 10,000 events/s; also printed per second of the server's CPU,
  which a loaded machine does not distort.

"before" is the swell of $SWELL_BASELINE_SRC (its `src/`), served the same way, when
it is set; the ratio is after/before. Both serve the same store. FANOUT_STORES="sqlite
postgres" measures it all again over a Postgres server of its own
(tests/postgres_server.py's), where the tails wake on the commits' NOTIFY.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from store_lib import PYTHON, REPO, loop_batches, verdict, write_project

from swell.events import models as ev
from swell.store.location import open_store

CLIENTS = int(os.environ.get("FANOUT_CLIENTS", "50"))
EVENTS = int(os.environ.get("FANOUT_EVENTS", "60"))  # commits to the live run
IDLE_SECONDS = float(os.environ.get("IDLE_SECONDS", "10"))
CATCH_UP_SECONDS = 300.0
BIG_VISITS = int(os.environ.get("FANOUT_BIG_VISITS", "10000"))
BIG = "loop-20261128-000000-fanout"
LIVE = "live-20261128-000000-fanout"
GOALS = {"p95": 150.0, "live cpu": 15.0, "idle cpu": 5.0, "catch-up": 10_000.0}


STORE: list[str] = []  # the Postgres store's URL while it is measured (else the project's)


def store_at(root: Path) -> str:
    return STORE[0] if STORE else str(root / ".swell" / "state.db")


def build(root: Path) -> int:
    """The project, its 10,000-visit run (left running) and the live run's start."""
    write_project(root, BIG_VISITS // 3 + 1)
    store = open_store(store_at(root))
    store.create_run(run_id=BIG, pipeline="loop", input_text="", workspace=str(root))
    for batch in loop_batches(BIG, BIG_VISITS, BIG_VISITS // 3 + 1, workspace=str(root)):
        store.emit(batch)
    last = store.get_run(BIG).last_seq
    store.close()
    return last


# ------------------------------------------------------------------ the server


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(root: Path, src: str | None) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "SWELL_STORE")}
    env.pop("PYTHONPATH", None)
    if src:
        env["PYTHONPATH"] = src
    if STORE:
        env["SWELL_STORE"] = STORE[0]
    proc = subprocess.Popen(
        [PYTHON, "-m", "swell", "serve", "--port", str(port)],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(1200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc, port
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("FAILED: swell serve did not start")


# ------------------------------------------------------------------ SSE clients


@dataclass
class Client:
    """One SSE client: when each event (by seq) arrived, and how many came."""

    arrived: dict[int, float] = field(default_factory=dict)
    count: int = 0
    last: int = 0
    ready: bool = False  # the response's head came: the server streams to it


async def sse(port: int, path: str, client: Client, until: int | None = None) -> None:
    """Read `path`'s SSE stream (HTTP/1.1, chunked) until its `end`, or event `until`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    await writer.drain()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass  # the response's head
    client.ready = True
    buffer = b""
    try:
        while True:
            size = int((await reader.readline()).strip() or b"0", 16)
            if size == 0:
                return
            buffer += (await reader.readexactly(size + 2))[:-2]  # less the chunk's CRLF
            *frames, buffer = buffer.split(b"\n\n")
            now = time.time() * 1000
            for text in frames:
                if text.startswith(b"id: ") and b"\nevent: swell" in text:
                    seq = int(text[4 : text.index(b"\n")])
                    client.arrived.setdefault(seq, now)
                    client.count += 1
                    client.last = seq
                    if until is not None and seq >= until:
                        return
                elif b"event: end" in text:
                    return
    finally:
        writer.close()


async def connected(clients: list[Client]) -> None:
    """Until every client's stream has started (and a second more: what joining cost
    the server is not what watching costs it)."""
    for _ in range(1200):
        if all(c.ready for c in clients):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)


# ------------------------------------------------------------------ measurements


def live(port: int, pid: int, root: Path, run_id: str) -> tuple[list[float], float]:
    """Latencies (ms) of the live run's events to 50 clients, and the server's CPU (%)."""
    store = open_store(store_at(root))
    seq = 0
    committed: dict[int, float] = {}

    def commit(*events: ev.BaseEvent) -> float:
        nonlocal seq
        for event in events:
            seq += 1
            event.run_id, event.seq, event.ts = run_id, seq, ev.now_iso()
        store.emit(list(events))
        return time.time() * 1000

    store.create_run(run_id=run_id, pipeline="loop", input_text="", workspace=str(root))
    commit(ev.RunStarted(pipeline="loop"))
    clients = [Client() for _ in range(CLIENTS)]

    def write() -> None:
        rng = random.Random(7)
        for visit in range(1, EVENTS + 1):
            started = ev.StepStarted(step_id="s", visit=visit, kind="command")
            finished = ev.StepFinished(step_id="s", visit=visit, outcome="success", exit_code=0)
            at = commit(started, finished)
            committed[seq - 1] = committed[seq] = at
            time.sleep(rng.uniform(0.02, 0.12))

    async def run() -> float:
        path = f"/api/runs/{run_id}/stream?after={seq}"
        tasks = [asyncio.create_task(sse(port, path, c, until=2 * EVENTS + 1)) for c in clients]
        await connected(clients)
        cpu, start = cpu_seconds(pid), time.monotonic()
        writer = threading.Thread(target=write)
        writer.start()
        await asyncio.to_thread(writer.join)
        await asyncio.wait(tasks, timeout=30)
        used = (cpu_seconds(pid) - cpu) / (time.monotonic() - start)
        for t in tasks:
            t.cancel()
        return used * 100

    try:
        used = asyncio.run(run())
    finally:
        store.close()
    latencies = [
        c.arrived[s] - at for c in clients for s, at in committed.items() if s in c.arrived
    ]
    missing = CLIENTS * len(committed) - len(latencies)
    if missing:
        print(f"  ({missing} events never reached their client: counted as 30 s)", flush=True)
        latencies += [30_000.0] * missing
    return latencies, used


def idle(port: int, pid: int, last: int) -> float:
    """The server's CPU (% of a core) while 50 clients watch the idle running run."""

    async def run() -> float:
        clients = [Client() for _ in range(CLIENTS)]
        path = f"/api/runs/{BIG}/stream?after={last}"
        tasks = [asyncio.create_task(sse(port, path, c)) for c in clients]
        await connected(clients)
        cpu, start = cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(IDLE_SECONDS)
        used = (cpu_seconds(pid) - cpu) / (time.monotonic() - start)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return used * 100

    return asyncio.run(run())


def catch_up(port: int, pid: int, last: int) -> tuple[float, float]:
    """Events/s of one stream from the big run's start to its newest event, and the
    server's CPU seconds for it."""
    client = Client()
    cpu, start = cpu_seconds(pid), time.perf_counter()
    path = f"/api/runs/{BIG}/stream?after=0"
    with contextlib.suppress(TimeoutError):
        asyncio.run(asyncio.wait_for(sse(port, path, client, last), CATCH_UP_SECONDS))
    took = time.perf_counter() - start
    if client.count != last:
        print(f"  (the catch-up sent {client.count:,} of {last:,} events in {took:.0f} s)")
    return client.count / took, cpu_seconds(pid) - cpu


def measure(root: Path, src: str | None, last: int, live_run: str) -> dict[str, float]:
    proc, port = serve(root, src)
    try:
        out: dict[str, float] = {}
        latencies, out["live cpu"] = live(port, proc.pid, root, live_run)
        latencies.sort()
        out["p50"] = statistics.median(latencies)
        out["p95"] = latencies[int(len(latencies) * 0.95) - 1]
        out["idle cpu"] = idle(port, proc.pid, last)
        out["catch-up"], out["catch-up cpu s"] = catch_up(port, proc.pid, last)
        # what the server could send with a core to itself (the machine may be shared)
        out["catch-up per cpu s"] = last / max(out["catch-up cpu s"], 1e-3)
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    stores = os.environ.get("FANOUT_STORES", "sqlite").split()
    if "sqlite" in stores:
        print(f"web fan-out over SQLite: {CLIENTS} clients", flush=True)
        report(run_all())
    if "postgres" in stores:  # a server of its own (tests/postgres_server.py)
        sys.path.insert(0, str(REPO / "tests"))
        from postgres_server import start, stop

        with tempfile.TemporaryDirectory(prefix="swell-fanout-pg-") as tmp:
            os.chmod(tmp, 0o755)
            server = start(Path(tmp))
            STORE.append(server.fresh_schema())
            try:
                print(f"\nweb fan-out over Postgres: {CLIENTS} clients", flush=True)
                report(run_all())
            finally:
                stop(server)
    return 0


def run_all() -> dict[str, dict[str, float]]:
    baseline = os.environ.get("SWELL_BASELINE_SRC")
    with tempfile.TemporaryDirectory(prefix="swell-fanout-") as tmp:
        start = time.perf_counter()
        last = build(Path(tmp))
        print(
            f"  a running run of {BIG_VISITS:,} visits ({last:,} events), "
            f"built in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        found: dict[str, dict[str, float]] = {}
        for name, src in (("before", baseline), ("after", str(REPO / "src"))):
            if name == "before" and not src:
                print("  (no 'before': set SWELL_BASELINE_SRC to a swell src/ to compare)")
                continue
            found[name] = measure(Path(tmp), src, last, f"{LIVE}-{name}")
            print(
                f"  {name}: " + ", ".join(f"{k} {v:,.1f}" for k, v in found[name].items()),
                flush=True,
            )
    return found


def report(found: dict[str, dict[str, float]]) -> None:
    after, before = found["after"], found.get("before")
    rows = [
        ("live: commit -> client p95 (ms)", "p95", lambda v: v <= GOALS["p95"], "<= 150 ms"),
        ("live: server CPU (% of a core)", "live cpu", lambda v: v <= GOALS["live cpu"], "<= 15%"),
        ("idle: server CPU (% of a core)", "idle cpu", lambda v: v <= GOALS["idle cpu"], "<= 5%"),
        ("catch-up (events/s)", "catch-up", lambda v: v >= GOALS["catch-up"], ">= 10,000/s"),
        (
            "catch-up (events per server CPU s)",
            "catch-up per cpu s",
            lambda v: v >= GOALS["catch-up"],
            "(the same, by CPU)",
        ),
    ]
    print(f"\n  {'':<36} {'before':>10} {'after':>10} {'ratio':>7}  goal")
    for label, key, ok, goal in rows:
        b = f"{before[key]:,.1f}" if before else "n/a"
        r = f"{after[key] / before[key]:.2f}x" if before and before[key] else "n/a"
        print(
            f"  {label:<36} {b:>10} {after[key]:>10,.1f} {r:>7}  {goal}  {verdict(ok(after[key]))}"
        )


if __name__ == "__main__":
    sys.exit(main())
