"""What does the store cost per visit, and how much disk does a visit take?

Goals (docs/performance.md, "The store"): the store's cost per visit well down (at
most half of before) and state.db per 1000 visits at least halved.

1. In the loop: a real 3,000-visit command loop (implement -> run-tests -> gate) run
   in process by the runtime (`execute`, no printers), with the event bus timed: what
   committing each visit's batch costs (the store, and the snapshots observer where
   there is one) among the loop's own processes. Also the whole run, and the same two
   commands in a `subprocess.run` loop: swell's overhead per visit.
2. Alone: the same loop's events (4 a visit, a batch a visit, as the run loop commits
   them) written through the same bus into a fresh state.db, nothing else running:
   the store's cost without the loop around it. Then the database's used pages per
   1000 visits (after a checkpoint).

Before and after run interleaved in rounds (LOOP_BENCH_ROUNDS, default 3), each in
a fresh process (see store_lib); medians are reported. Absolute times are printed
for context only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from store_lib import (
    IMPLEMENT,
    PYTHON,
    RUN_ID,
    BenchError,
    Code,
    codes,
    median,
    note_codes,
    ratio,
    scratch,
    test_command,
    verdict,
    worker,
    write_project,
)

VISITS = 3000
ROUNDS = int(__import__("os").environ.get("LOOP_BENCH_ROUNDS", "3"))

PLAIN = """\
import subprocess, sys
def sh(command):
    return subprocess.run(["sh", "-c", command], stdin=subprocess.DEVNULL,
                          capture_output=True, start_new_session=True).returncode
while True:
    if sh(sys.argv[1]) != 0:
        sys.exit("implement failed")
    if sh(sys.argv[2]) == 0:
        break
"""


# ------------------------------------------------------------------ workers


def write_worker(directory: str) -> dict[str, Any]:
    import sqlite3

    from store_lib import loop_batches

    from swell.engine.loop.state import RunState
    from swell.events.bus import EventBus
    from swell.store.location import open_store

    path = Path(directory) / "state.db"
    store = open_store(path)
    store.create_run(run_id=RUN_ID, pipeline="loop", input_text="", workspace="/ws")
    sinks: list[Any] = [store]
    state = RunState(RUN_ID)
    try:  # the observer `execute` puts after the store, where this swell has one
        from swell.state_snapshots import StateSnapshots

        snapshots = StateSnapshots(store)
        snapshots.watch(RUN_ID, state)
        sinks.append(snapshots)
    except ImportError:  # the code measured "before" keeps no snapshots
        pass
    bus = EventBus(*sinks)
    batches = list(loop_batches(RUN_ID, VISITS, VISITS // 3))
    spent = 0.0
    for batch in batches:
        for event in batch:  # the runner folds its events before it commits them
            state.apply(event)
        start = time.perf_counter()
        bus.emit(batch)
        spent += time.perf_counter() - start
    run = store.get_run(RUN_ID)
    if (run.status, run.visits) != ("succeeded", VISITS):
        raise BenchError(f"the run reads {run.status} with {run.visits} visits")
    store.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages, size, free = (
        db.execute(f"PRAGMA {name}").fetchone()[0]
        for name in ("page_count", "page_size", "freelist_count")
    )
    db.close()
    return {
        "us_per_visit": spent / VISITS * 1e6,
        "commits": len(batches),
        "bytes_per_1000": (pages - free) * size / VISITS * 1000,
    }


def loop_worker(directory: str) -> dict[str, Any]:
    import asyncio

    from swell import runtime
    from swell.engine.visit.context import RunOptions
    from swell.events import bus

    project = Path(directory)
    write_project(project, VISITS // 3)
    spent = 0.0
    emit = bus.EventBus.emit

    def timed(self: Any, events: Any) -> None:
        nonlocal spent
        start = time.perf_counter()
        emit(self, events)
        spent += time.perf_counter() - start

    bus.EventBus.emit = timed  # type: ignore[method-assign]
    rt = runtime.open_runtime(project)
    loaded, _ = runtime.check_pipeline(rt, "loop")
    plan = runtime.create_run(rt, loaded, "", RunOptions())
    start = time.perf_counter()
    summary = asyncio.run(runtime.execute(rt, plan, []))
    seconds = time.perf_counter() - start
    if (summary.status, summary.visits) != ("succeeded", VISITS):
        raise BenchError(f"the run ended {summary.status} after {summary.visits} visits")
    return {"store_us": spent / VISITS * 1e6, "run_s": seconds}


# ------------------------------------------------------------------ driver


def store_cost(found: list[Code], tmp: Path) -> dict[str, dict[str, float]]:
    samples: dict[str, list[dict[str, Any]]] = {c.name: [] for c in found}
    for r in range(ROUNDS):
        for code in found[r % len(found) :] + found[: r % len(found)]:
            directory = tmp / f"write-{code.name}-{r}"
            directory.mkdir()
            samples[code.name].append(worker(__file__, code, "write", str(directory)))
        cells = "   ".join(f"{n} {s[-1]['us_per_visit']:6.1f} us/visit" for n, s in samples.items())
        print(f"  round {r + 1}: {cells}", flush=True)
    return {
        name: {key: median([x[key] for x in rows]) for key in rows[0]}
        for name, rows in samples.items()
    }


def run_checked(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    import subprocess

    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return seconds


def in_the_loop(found: list[Code], tmp: Path) -> dict[str, dict[str, float]]:
    iterations = VISITS // 3
    script = tmp / "plain.py"
    script.write_text(PLAIN)
    rows: dict[str, list[dict[str, Any]]] = {c.name: [] for c in found}
    plain: list[float] = []
    for r in range(ROUNDS):
        for code in found[r % len(found) :] + found[: r % len(found)]:
            rows[code.name].append(
                worker(__file__, code, "loop", str(tmp / f"loop-{code.name}-{r}"))
            )
        work = tmp / f"plain-{r}"
        work.mkdir()
        plain.append(run_checked([PYTHON, str(script), IMPLEMENT, test_command(iterations)], work))
        cells = "   ".join(
            f"{n} {x[-1]['store_us']:5.0f} us/visit in the store, run {x[-1]['run_s']:5.2f}s"
            for n, x in rows.items()
        )
        print(f"  round {r + 1}: {cells}   plain {plain[-1]:5.2f}s", flush=True)
    floor = median(plain)
    return {
        name: {
            "store_us": median([x["store_us"] for x in found_rows]),
            "overhead_us": (median([x["run_s"] for x in found_rows]) - floor) / VISITS * 1e6,
        }
        for name, found_rows in rows.items()
    }


def main() -> int:
    if len(sys.argv) > 3 and sys.argv[1] == "--worker":
        import json

        work = {"write": write_worker, "loop": loop_worker}[sys.argv[2]]
        print(json.dumps(work(sys.argv[3])))
        return 0
    print(f"store write benchmark: {VISITS} visits, {ROUNDS} rounds")
    try:
        with scratch("swell-store-write-") as name:
            tmp = Path(name)
            found = codes(tmp)
            note_codes(found)
            print("\n1. in the loop: the event bus (store, snapshots) in a real run")
            loop = in_the_loop(found, tmp)
            print("\n2. alone: the same events through the same bus, nothing else running")
            cost = store_cost(found, tmp)
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    print("\nsummary (medians)")
    print(f"  {'figure':<40} {'before':>9} {'after':>9} {'after/before':>13}  goal")

    def line(label: str, key: str, table: dict[str, dict[str, float]], goal: bool) -> None:
        after = table["after"][key]
        before = table["before"][key] if "before" in table else None
        judged = f"<= 0.50x  {verdict(bool(before) and after <= 0.5 * before)}"
        print(
            f"  {label:<40} {before or 0:>9.0f} {after:>9.0f} {ratio(after, before):>13}  "
            + (judged if goal else "(context)")
        )

    line("store cost per visit, in the loop (us)", "store_us", loop, False)
    line("store cost per visit, alone (us)", "us_per_visit", cost, False)
    line("swell overhead per visit (us)", "overhead_us", loop, False)
    kb = {name: {"kb": row["bytes_per_1000"] / 1e3} for name, row in cost.items()}
    line("state.db per 1000 visits (kB)", "kb", kb, True)
    print(f"  commits: {cost['after']['commits']:.0f} for {VISITS} visits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
