"""Where does the durable loop's extra time go? (benchmarks/loop_overhead.py measures
the total; this splits it.)

The durable workload (1,000 rounds of `implement` and `run-tests` commands and a
`gate`: 3,000 visits, 2,000 processes) runs six ways, each a fresh process:

- plain: the bare `subprocess.run` loop of loop_overhead.py, the floor;
- logged: the plain loop plus a hand-written durable event log: before each process
  starts, one SQLite transaction (WAL, synchronous=NORMAL, as swell's store) commits
  the events of the visits since the last one, as JSON rows. What durability itself
  costs in Python, with nothing else;
- processes: the same two commands through swell's process runner
  (`swell.process.run_process`, in an asyncio loop, with an environment the size of a
  run's), and nothing else: what swell's way of starting and waiting for a process
  costs over `subprocess.run`;
- engine: `swell run loop` with every command answered at once instead of run (the
  commands' outcomes are what the real ones would be): the engine, the store and the
  printers alone, per visit, without a process to wait for. Both its wall time and
  the main thread's CPU time are reported;
- unstored: `swell run loop` with its events not stored once the run has started
  (the store's commits and the state snapshots skipped, until the run's last batch):
  swell's engine, processes, printer and start-up, without its store;
- swell: `swell run loop`, as loop_overhead.py runs it.

So swell - plain ~ (processes - plain) + engine + start-up, where start-up is what
benchmarks/startup.py measures; swell - unstored is what storing the events costs,
to set against logged - plain. The rounds are interleaved and the minimum of
`LOOP_BENCH_ROUNDS` (default 5) is reported.

The engine's time holds the run's own start-up (loading the project, the store, the
workspace): `engine` also runs at a tenth of the workload, and the difference between
the two, over the visits between them, is the engine's work per visit. Two goals
are printed with PASS or FAIL: swell at most 1.2x plain (as loop_overhead.py judges
it), and the engine's work per visit at most 60 us. `SWELL_BASELINE_SRC`, the `src/`
of another checkout, adds its engine and its swell (`@base`) to the same rounds. A
missed goal does not change the exit code; a run that goes wrong does.
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
    BOOT,
    IMPLEMENT,
    PLAIN_SCRIPT,
    PYTHON,
    SH_FUNCTION,
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
BASELINE_SRC = os.environ.get("SWELL_BASELINE_SRC")
WORKLOAD = Workload("durable", 1000, shell_test(1000))
SHORT = Workload("durable", 100, shell_test(100))  # the engine's start-up, to take off
GOAL = 1.2  # swell / plain
ENGINE_GOAL_US = 60.0  # the engine's work per visit

PROCESSES_SCRIPT = """\
import asyncio, json, os, shutil, sys
from swell.process import run_process

implement, test = sys.argv[1], sys.argv[2]
sh = shutil.which("sh")
env = {**os.environ, "SWELL_RUN_ID": "loop-20261124-000000-00000000", "SWELL_STEP_ID": "implement",
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

LOGGED_SCRIPT = (
    """\
import json, sqlite3, subprocess, sys, time

implement, test = sys.argv[1], sys.argv[2]
db = sqlite3.connect("events.db", isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute(
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, type TEXT NOT NULL, "
    "step_id TEXT, visit INTEGER, data TEXT NOT NULL)"
)
seq = 0


def commit(events):
    global seq
    ts, rows = int(time.time() * 1000), []
    for kind, step, visit, data in events:
        seq += 1
        rows.append((seq, ts, kind, step, visit, json.dumps(data)))
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
    db.execute("COMMIT")

"""
    + SH_FUNCTION
    + """

def finished(step, visit, code):
    return ("step.finished", step, visit, {"outcome": "failure" if code else "success", "exit_code": code})


commit([("run.started", None, None, {"pipeline": "loop"}), ("step.started", "implement", 1, {})])
iterations = 0
while True:
    iterations += 1
    code = sh(implement)
    if code != 0:
        sys.exit("implement failed")
    commit([finished("implement", iterations, code), ("step.started", "run-tests", iterations, {})])
    code = sh(test)
    gate = [
        finished("run-tests", iterations, code),
        ("step.started", "gate", iterations, {}),
        ("step.finished", "gate", iterations, {"outcome": "success"}),
    ]
    if code == 0:
        commit([*gate, ("run.finished", None, None, {"status": "succeeded"})])
        break
    commit([*gate, ("route.taken", "gate", iterations, {"target": "implement"}),
            ("step.started", "implement", iterations + 1, {})])
print(json.dumps({"iterations": iterations, "passed": True}))
"""
)

# `swell run loop` with the batches between the run's first two and its last not
# committed, and no state snapshots (they would refer to events never stored)
UNSTORED_SCRIPT = """\
import sys
import swell.runtime as runtime
import swell.store.sqlite.store as sqlite

commit = sqlite.SqliteStore.emit
batches = 0


def emit(self, events):
    global batches
    batches += 1
    if batches <= 2 or any(e.type == "run.finished" for e in events):
        commit(self, events)


sqlite.SqliteStore.emit = emit
runtime.StateSnapshots.emit = lambda self, events: None
sys.argv = ["swell", "run", "loop"]
from swell.cli.app import main

main()
"""

# `swell run loop` in-process, each command step answered at once: `implement`
# "appends" a line (a counter), `run-tests` passes once there are enough. The visit of
# a command step is in command_visit.py (the kind's module only names it)
ENGINE_SCRIPT = """\
import json, sys, time
import swell.engine.steps.command_visit as command
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


def measure(root: Path, scripts: Path, projects: dict[str, Path]) -> dict[str, list[float]]:
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

    cpu: dict[str, list[float]] = {}

    def engine(
        name: str, src: str | None, workload: Workload, project: Path
    ) -> Callable[[], float]:
        """The engine alone (engine.py), on the swell in `src` (this checkout's when None)."""

        def run() -> float:
            argv = [PYTHON, str(scripts / "engine.py"), str(workload.iterations)]
            env = {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}
            if src is not None:
                env["PYTHONPATH"] = src
            proc = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise BenchError(f"{name}: exited {proc.returncode}:\n{proc.stderr[-2000:]}")
            result = json.loads(proc.stderr.strip().splitlines()[-1])
            if result["lines"] != workload.iterations:
                raise BenchError(f"{name}: {result['lines']} implement visits")
            cpu.setdefault(f"{name} cpu", []).append(result["cpu"])
            return float(result["wall"])

        return run

    def swell_run(name: str, argv: list[str], project: Path) -> Callable[[], float]:
        def run() -> float:
            seconds, out = timed(lambda: run_checked(argv, project))
            if "succeeded" not in out.splitlines()[-1]:
                raise BenchError(f"{name}: the run did not succeed:\n{out[-2000:]}")
            return seconds

        return run

    runners: dict[str, Callable[[], float]] = {
        "plain": loop_script("plain"),
        "logged": loop_script("logged"),
        "processes": loop_script("processes"),
        "engine": engine("engine", None, WORKLOAD, projects["engine"]),
        "engine short": engine("engine short", None, SHORT, projects["short"]),
        "unstored": swell_run(
            "unstored", [PYTHON, str(scripts / "unstored.py")], projects["swell"]
        ),
        "swell": swell_run("swell", [SWELL, "run", "loop"], projects["swell"]),
    }
    if BASELINE_SRC:
        base = str(Path(BASELINE_SRC).resolve())
        runners["engine@base"] = engine("engine@base", base, WORKLOAD, projects["engine@base"])
        runners["engine short@base"] = engine(
            "engine short@base", base, SHORT, projects["short@base"]
        )
        argv = [PYTHON, "-c", BOOT, base, "run", "loop"]
        runners["swell@base"] = swell_run("swell@base", argv, projects["swell@base"])
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for r in range(ROUNDS):
        order = names[r % len(names) :] + names[: r % len(names)]
        cells = []
        for name in order:
            times[name].append(runners[name]())
            cells.append(f"{name} {times[name][-1]:5.2f}s")
        print(f"  round {r + 1}: " + "   ".join(cells), flush=True)
    times.update(cpu)
    return times


def engine_per_visit(best: dict[str, float], suffix: str = "") -> tuple[float, float]:
    """The engine's work per visit in us, wall and main-thread CPU: the full run less
    the short one, over the visits between them (the run's start-up taken off)."""
    visits = WORKLOAD.visits - SHORT.visits
    wall = (best[f"engine{suffix}"] - best[f"engine short{suffix}"]) / visits * 1e6
    cpu = (best[f"engine{suffix} cpu"] - best[f"engine short{suffix} cpu"]) / visits * 1e6
    return wall, cpu


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(times: dict[str, list[float]]) -> None:
    best = {name: min(values) for name, values in times.items()}
    visits = WORKLOAD.visits
    per_visit = {name: seconds / visits * 1e6 for name, seconds in best.items()}
    print(f"\n  {'':<26} {'min':>8} {'us/visit':>9}")
    for name in ["plain", "logged", "processes", "unstored", "swell", "swell@base"]:
        if name in best:
            print(f"  {name:<26} {best[name]:7.2f}s {per_visit[name]:9.0f}")
    for suffix in ["", "@base"]:
        if f"engine{suffix}" not in best:
            continue
        engine, cpu = best[f"engine{suffix}"], best[f"engine{suffix} cpu"]
        print(f"  {'engine' + suffix + ' (wall)':<26} {engine:7.2f}s {engine / visits * 1e6:9.0f}")
        print(f"  {'engine' + suffix + ' (main thread)':<26} {cpu:7.2f}s {cpu / visits * 1e6:9.0f}")
        wall_us, cpu_us = engine_per_visit(best, suffix)
        print(
            f"  {'engine' + suffix + ' per visit':<26} {wall_us:8.0f} us wall, {cpu_us:.0f} us "
            f"main-thread CPU (the {SHORT.visits}-visit run's time taken off: its start-up)"
        )
    gap = best["swell"] - best["plain"]
    processes = best["processes"] - best["plain"]
    rest = gap - processes - best["engine"]
    print(
        f"\n  swell over plain: {gap:.2f}s ({gap / visits * 1e6:.0f} us a visit, "
        f"{best['swell'] / best['plain']:.2f}x)\n"
        f"    processes over plain: {processes:+.2f}s\n"
        f"    engine, store and printers: {best['engine']:.2f}s\n"
        f"    the rest (start-up, and what a real process adds to a visit): {rest:+.2f}s\n"
        f"  storing the events: swell {best['swell'] - best['unstored']:+.2f}s over swell unstored; "
        f"a hand-written event log {best['logged'] - best['plain']:+.2f}s over plain\n"
        f"  swell unstored / plain: {best['unstored'] / best['plain']:.2f}x; "
        f"logged / plain: {best['logged'] / best['plain']:.2f}x"
    )
    ratio = best["swell"] / best["plain"]
    print(f"\n  goal: swell <= {GOAL:.2f}x plain: {ratio:.2f}x  {verdict(ratio <= GOAL)}")
    if "swell@base" in best:
        print(f"    (swell@base: {best['swell@base'] / best['plain']:.2f}x)")
    wall_us, _ = engine_per_visit(best)
    print(
        f"  goal: engine work <= {ENGINE_GOAL_US:.0f} us a visit: {wall_us:.0f} us  "
        f"{verdict(wall_us <= ENGINE_GOAL_US)}"
    )
    if "engine@base" in best:
        print(f"    (engine@base: {engine_per_visit(best, '@base')[0]:.0f} us)")


def main() -> int:
    if ROUNDS < 1:
        print("LOOP_BENCH_ROUNDS must be at least 1", file=sys.stderr)
        return 2
    print(f"loop breakdown: {WORKLOAD.visits} visits, {ROUNDS} rounds")
    if BASELINE_SRC:
        print(f"@base: {BASELINE_SRC}")
    try:
        with tempfile.TemporaryDirectory(prefix="swell-loop-breakdown-") as tmp:
            root = Path(tmp)
            scripts = root / "scripts"
            scripts.mkdir()
            (scripts / "plain.py").write_text(PLAIN_SCRIPT)
            (scripts / "logged.py").write_text(LOGGED_SCRIPT)
            (scripts / "processes.py").write_text(PROCESSES_SCRIPT)
            (scripts / "unstored.py").write_text(UNSTORED_SCRIPT)
            (scripts / "engine.py").write_text(ENGINE_SCRIPT)
            projects = {}  # each its own state database: schemas may differ
            kinds = {"engine": WORKLOAD, "short": SHORT, "swell": WORKLOAD}
            for name, workload in kinds.items():
                for suffix in ["", "@base"] if BASELINE_SRC else [""]:
                    projects[name + suffix] = root / f"project-{name}{suffix}"
                    write_project(projects[name + suffix], workload)
            report(measure(root, scripts, projects))
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
