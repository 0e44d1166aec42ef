"""Does resuming a run cost the same however long the run is?

Goal (docs/performance.md, "The store"): resuming a 30,000-visit run takes at most
0.4 s and 60 MiB, about what a 1,000-visit run takes.

For each size, a run of the command loop is written straight into a project's store,
a batch a visit as the run loop commits them, through the bus the runtime builds (so
the state snapshots observer writes its snapshots where this swell has one), and left
going: a visit started, no process holding it, as `kill -9` leaves a run. Then the
resume path runs in a fresh process, as `swell resume RUN` does before its first
event: open the project, claim the run, load its stored pipeline, lint it, rebuild
the run's state (`claim_for_resume`). Timed: that call; memory: the process's peak
RSS (and what it was before the call: the interpreter and swell's modules).

Before and after run interleaved in rounds (RESUME_BENCH_ROUNDS, default 5), each
resume in a fresh process; medians (and minima: the machine may be noisy).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from store_lib import (
    RUN_ID,
    BenchError,
    codes,
    median,
    note_codes,
    peak_rss_mib,
    ratio,
    scratch,
    verdict,
    worker,
    write_project,
)

SIZES = (1_000, 30_000)
ROUNDS = int(os.environ.get("RESUME_BENCH_ROUNDS", "5"))
GOAL_SECONDS, GOAL_MIB = 0.4, 60.0


# ------------------------------------------------------------------ workers


def build(directory: str, visits: int) -> dict[str, Any]:
    from store_lib import loop_batches

    from swell.engine.loop.state import RunState
    from swell.events.bus import EventBus
    from swell.store.location import open_store

    project = Path(directory)
    iterations = visits // 3 + 1  # the run is still going after `visits` visits
    write_project(project, iterations)
    pipeline = project / ".agents" / "pipelines" / "loop.yaml"
    store = open_store(project / ".swell" / "state.db")
    store.create_run(
        run_id=RUN_ID,
        pipeline="loop",
        input_text="",
        workspace=str(project / ".swell" / "workspaces" / RUN_ID),
        pipeline_path=str(pipeline),
        project_root=str(project),
        pipeline_text=pipeline.read_text(),
    )
    state = RunState(RUN_ID)
    sinks: list[Any] = [store]
    try:
        from swell.state_snapshots import StateSnapshots

        snapshots = StateSnapshots(store)
        snapshots.watch(RUN_ID, state)
        sinks.append(snapshots)
    except ImportError:  # the code measured "before" keeps no snapshots
        pass
    bus = EventBus(*sinks)
    for batch in loop_batches(RUN_ID, visits, iterations):
        for event in batch:
            state.apply(event)
        bus.emit(batch)
    store.close()
    return {"events": state.seq, "visits": state.total}


def resume(directory: str, visits: int) -> dict[str, Any]:
    from swell.runtime import claim_for_resume, open_runtime

    before = peak_rss_mib()
    rt = open_runtime(Path(directory))
    start = time.perf_counter()
    resumed = claim_for_resume(rt, RUN_ID)
    seconds = time.perf_counter() - start
    peak = peak_rss_mib()
    if resumed.state.total != visits or not resumed.state.open:
        raise BenchError(f"the resumed state has {resumed.state.total} visits, not {visits}")
    rt.store.release(RUN_ID)
    return {"seconds": seconds, "rss_before": before, "peak_rss": peak}


# ------------------------------------------------------------------ driver


def main() -> int:
    if len(sys.argv) > 4 and sys.argv[1] == "--worker":
        work = {"build": build, "resume": resume}[sys.argv[2]]
        print(json.dumps(work(sys.argv[3], int(sys.argv[4]))))
        return 0
    print(f"resume benchmark: runs of {', '.join(map(str, SIZES))} visits, {ROUNDS} rounds")
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    try:
        with scratch("swell-store-resume-") as name:
            tmp = Path(name)
            found = codes(tmp)
            note_codes(found)
            for visits in SIZES:
                for code in found:
                    directory = tmp / f"{code.name}-{visits}"
                    start = time.perf_counter()
                    made = worker(__file__, code, "build", str(directory), str(visits))
                    took = time.perf_counter() - start
                    print(f"  built {code.name} {visits}: {made['events']} events in {took:.1f}s")
            for r in range(ROUNDS):
                cells = []
                for visits in SIZES:
                    for code in found[r % len(found) :] + found[: r % len(found)]:
                        directory = tmp / f"{code.name}-{visits}"
                        got = worker(__file__, code, "resume", str(directory), str(visits))
                        results.setdefault((code.name, visits), []).append(got)
                        cells.append(
                            f"{code.name} {visits}: {got['seconds']:.3f}s {got['peak_rss']:.0f}MiB"
                        )
                print(f"  round {r + 1}: " + "   ".join(cells), flush=True)
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    report(results, [c.name for c in found])
    return 0


def report(results: dict[tuple[str, int], list[dict[str, Any]]], names: list[str]) -> None:
    def fig(name: str, visits: int, key: str, how: Any = median) -> float | None:
        rows = results.get((name, visits))
        return how([r[key] for r in rows]) if rows else None

    small, large = SIZES
    print("\nsummary (medians; min in brackets)")
    print(f"  {'figure':<34} {'before':>16} {'after':>16} {'after/before':>13}")
    for visits in SIZES:
        for key, label, unit in (("seconds", "resume", "s"), ("peak_rss", "peak RSS", "MiB")):
            before = fig("before", visits, key)
            after = fig("after", visits, key)
            low_b, low_a = fig("before", visits, key, min), fig("after", visits, key, min)
            digits = 3 if key == "seconds" else 1
            cell_b = f"{before:.{digits}f} [{low_b:.{digits}f}]" if before is not None else "n/a"
            cell_a = f"{after:.{digits}f} [{low_a:.{digits}f}]" if after is not None else "n/a"
            print(
                f"  {label + f' {visits} visits ({unit})':<34} {cell_b:>16} {cell_a:>16} "
                f"{ratio(after or 0, before):>13}"
            )
    base = fig("after", small, "rss_before") or 0
    print(f"  (the process before resuming: {base:.0f} MiB of interpreter and modules)")
    seconds = fig("after", large, "seconds", min) or 0
    mib = fig("after", large, "peak_rss") or 0
    grows = (fig("after", large, "seconds") or 0) / (fig("after", small, "seconds") or 1)
    print(f"\n  {large} visits / {small} visits, after: {grows:.2f}x the time")
    print(
        f"  resume of {large} visits <= {GOAL_SECONDS} s: {seconds:.3f} s (min)  "
        f"{verdict(seconds <= GOAL_SECONDS)}"
    )
    print(
        f"  resume of {large} visits <= {GOAL_MIB:.0f} MiB: {mib:.0f} MiB peak RSS  "
        f"{verdict(mib <= GOAL_MIB)}"
    )
    _ = names


if __name__ == "__main__":
    sys.exit(main())
