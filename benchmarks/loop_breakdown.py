"""Where does the durable loop's extra time go? (benchmarks/loop_overhead.py measures
the total; this splits it.)

The durable workload (1,000 rounds of `implement` and `run-tests` commands and a
`gate`: 3,000 visits, 2,000 processes) runs four ways, each a fresh process:

- plain: the bare `subprocess.run` loop of loop_overhead.py, the floor;
- processes: the same two commands through swell's process runner
  (`swell.process.run_process`, in an asyncio loop, with an environment the size of a
  run's), and nothing else: what swell's way of starting and waiting for a process
  costs over `subprocess.run`;
- engine: `swell run loop` with every command answered at once instead of run (the
  commands' outcomes are what the real ones would be): the engine, the store and the
  printers alone, per visit, without a process to wait for. Both its wall time and
  the main thread's CPU time are reported;
- swell: `swell run loop`, as loop_overhead.py runs it.

So swell - plain ~ (processes - plain) + engine + start-up, where start-up is what
benchmarks/startup.py measures. The rounds are interleaved and the minimum of
`LOOP_BENCH_ROUNDS` (default 5) is reported. Nothing is judged here (the goal is
loop_overhead.py's); the script exits non-zero only when a run goes wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loop_overhead import (
    IMPLEMENT,
    PLAIN_SCRIPT,
    PYTHON,
    SWELL,
    BenchError,
    Workload,
    check_result,
    check_work,
    run_checked,
    shell_test,
    timed,
    write_project,
)

ROUNDS = int(os.environ.get("LOOP_BENCH_ROUNDS", "5"))
WORKLOAD = Workload("durable", 1000, shell_test(1000))

PROCESSES_SCRIPT = """\
import asyncio, json, os, shutil, sys
from swell.process import run_process

implement, test = sys.argv[1], sys.argv[2]
sh = shutil.which("sh")
env = {**os.environ, "SWELL_RUN_ID": "loop-20261124-000000-0000", "SWELL_STEP_ID": "implement",
       "SWELL_VISIT": "1"}


async def loop():
    iterations = 0
    while True:
        if (await run_process([sh, "-c", implement], cwd=".", env=env)).exit_code != 0:
            sys.exit("implement failed")
        iterations += 1
        if (await run_process([sh, "-c", test], cwd=".", env=env)).exit_code == 0:
            return iterations


print(json.dumps({"iterations": asyncio.run(loop()), "passed": True}))
"""

# `swell run loop` in-process, each command step answered at once: `implement`
# "appends" a line (a counter), `run-tests` passes once there are enough
ENGINE_SCRIPT = """\
import json, sys, time
import swell.engine.steps.command as command
from swell.process import ProcessResult

iterations = int(sys.argv[1])
lines = 0


async def answer(argv, **_):
    global lines
    if argv[-1].startswith("echo"):
        lines += 1
        code = 0
    else:
        code = 0 if lines >= iterations else 1
    return ProcessResult(code, "", "", False, 0.0, False)


command.run_process = answer
sys.argv = ["swell", "run", "loop"]
from swell.cli.app import main

wall, cpu = time.perf_counter(), time.thread_time()
try:
    main()
except SystemExit as exc:
    if exc.code:
        raise
wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
print(json.dumps({"lines": lines, "wall": wall, "cpu": cpu}), file=sys.stderr)
"""


def _fresh(root: Path, name: str) -> Path:
    work = root / "scratch" / f"{name}-{time.monotonic_ns()}"
    work.mkdir(parents=True)
    return work


def measure(root: Path, scripts: Path, project: Path) -> dict[str, list[float]]:
    def loop_script(name: str) -> Callable[[], float]:
        """scripts/NAME.py running the loop's two commands in a fresh directory."""

        def run() -> float:
            work = _fresh(root, name)
            argv = [PYTHON, str(scripts / f"{name}.py"), IMPLEMENT, WORKLOAD.test]
            seconds, out = timed(lambda: run_checked(argv, work))
            check_result(out, WORKLOAD, name)
            check_work(work / "work.txt", WORKLOAD, name)
            return seconds

        return run

    engine_cpu: list[float] = []

    def engine() -> float:
        argv = [PYTHON, str(scripts / "engine.py"), str(WORKLOAD.iterations)]
        env = {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}
        proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BenchError(f"engine: exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        result = json.loads(proc.stderr.strip().splitlines()[-1])
        if result["lines"] != WORKLOAD.iterations:
            raise BenchError(f"engine: {result['lines']} implement visits")
        engine_cpu.append(result["cpu"])
        return float(result["wall"])

    def swell() -> float:
        seconds, out = timed(lambda: run_checked([SWELL, "run", "loop"], project))
        if "succeeded" not in out.splitlines()[-1]:
            raise BenchError(f"swell: the run did not succeed:\n{out[-2000:]}")
        return seconds

    runners: dict[str, Callable[[], float]] = {
        "plain": loop_script("plain"),
        "processes": loop_script("processes"),
        "engine": engine,
        "swell": swell,
    }
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(ROUNDS):
        order = names[r % len(names) :] + names[: r % len(names)]
        cells = []
        for name in order:
            times[name].append(runners[name]())
            cells.append(f"{name} {times[name][-1]:5.2f}s")
        print(f"  round {r + 1}: " + "   ".join(cells), flush=True)
    times["engine cpu"] = engine_cpu
    return times


def report(times: dict[str, list[float]]) -> None:
    best = {name: min(values) for name, values in times.items()}
    visits = WORKLOAD.visits
    per_visit = {name: seconds / visits * 1e6 for name, seconds in best.items()}
    print(f"\n  {'':<22} {'min':>8} {'us/visit':>9}")
    for name in ["plain", "processes", "swell"]:
        print(f"  {name:<22} {best[name]:7.2f}s {per_visit[name]:9.0f}")
    print(f"  {'engine (wall)':<22} {best['engine']:7.2f}s {per_visit['engine']:9.0f}")
    print(
        f"  {'engine (main thread)':<22} {best['engine cpu']:7.2f}s {per_visit['engine cpu']:9.0f}"
    )
    gap = best["swell"] - best["plain"]
    processes = best["processes"] - best["plain"]
    rest = gap - processes - best["engine"]
    print(
        f"\n  swell over plain: {gap:.2f}s ({gap / visits * 1e6:.0f} us a visit, "
        f"{best['swell'] / best['plain']:.2f}x)\n"
        f"    processes over plain: {processes:+.2f}s\n"
        f"    engine, store and printers: {best['engine']:.2f}s\n"
        f"    the rest (start-up, and what a real process adds to a visit): {rest:+.2f}s"
    )


def main() -> int:
    if ROUNDS < 1:
        print("LOOP_BENCH_ROUNDS must be at least 1", file=sys.stderr)
        return 2
    print(f"loop breakdown: {WORKLOAD.visits} visits, {ROUNDS} rounds")
    try:
        with tempfile.TemporaryDirectory(prefix="swell-loop-breakdown-") as tmp:
            root = Path(tmp)
            scripts = root / "scripts"
            scripts.mkdir()
            (scripts / "plain.py").write_text(PLAIN_SCRIPT)
            (scripts / "processes.py").write_text(PROCESSES_SCRIPT)
            (scripts / "engine.py").write_text(ENGINE_SCRIPT)
            project = root / "project"
            write_project(project, WORKLOAD)
            report(measure(root, scripts, project))
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
