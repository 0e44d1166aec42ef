"""Fifty runs writing to one store at once: how many events a second, how long a commit
waits?

No goal: a baseline for scale-out (Postgres, several machines). Each run is its own
process, as `swell run` is, with its own connection to one state.db; all start
together and commit the command loop's batches (4 events a visit, a batch a visit) as
fast as they can. Reported: events per second over all of them, and each commit's
latency (the `emit` call: waiting for the write lock included) as percentiles; the
same for one run alone, measured in the same run of this script. SQLite lets one
writer in at a time, so the sum stays near one writer's rate while latency grows with
the queue.

CONCURRENCY_BENCH_RUNS (default 50) and CONCURRENCY_BENCH_VISITS (visits per run,
default 150) size it; before and after as in store_lib.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from store_lib import PYTHON, BenchError, Code, codes, note_codes, ratio, scratch

RUNS = int(os.environ.get("CONCURRENCY_BENCH_RUNS", "50"))
VISITS = int(os.environ.get("CONCURRENCY_BENCH_VISITS", "150"))


def write(path: str, run_id: str, start_file: str) -> dict[str, Any]:
    """One run's writer: wait for the start, commit every batch, time each commit."""
    from store_lib import loop_batches

    from swell.store.location import open_store

    store = open_store(Path(path))
    store.create_run(run_id=run_id, pipeline="loop", input_text="", workspace="/ws")
    batches = list(loop_batches(run_id, VISITS, VISITS // 3 + 1))
    while not Path(start_file).exists():
        time.sleep(0.005)
    began = time.time()
    latencies = []
    for batch in batches:
        start = time.perf_counter()
        store.emit(batch)
        latencies.append(time.perf_counter() - start)
    ended = time.time()
    store.close()
    return {
        "began": began,
        "ended": ended,
        "events": sum(len(b) for b in batches),
        "latencies": latencies,
    }


def measure(code: Code, directory: Path, runs: int) -> dict[str, float]:
    directory.mkdir()
    path = directory / "state.db"
    go = directory / "go"
    subprocess.run(  # the schema first, so the writers do not all migrate at once
        [PYTHON, "-c", f"from swell.store.location import open_store; open_store({str(path)!r}).close()"],
        env=code.env(),
        check=True,
    )  # fmt: skip
    procs = [
        subprocess.Popen(
            [PYTHON, __file__, "--worker", str(path), f"run-{n:03d}", str(go)],
            env=code.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parent,
        )
        for n in range(runs)
    ]
    time.sleep(1.0 + 0.05 * runs)  # every writer has started and waits
    go.touch()
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise BenchError(f"{code.name}: a writer failed:\n{err[-1500:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    span = max(r["ended"] for r in results) - min(r["began"] for r in results)
    latencies = sorted(x for r in results for x in r["latencies"])
    cut = statistics.quantiles(latencies, n=100)
    return {
        "events_per_s": sum(r["events"] for r in results) / span,
        "commits": len(latencies),
        "p50_ms": cut[49] * 1000,
        "p95_ms": cut[94] * 1000,
        "p99_ms": cut[98] * 1000,
        "max_ms": latencies[-1] * 1000,
    }


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(write(*sys.argv[2:5])))
        return 0
    print(f"concurrency benchmark: {RUNS} runs at once on one store, {VISITS} visits each")
    figures: dict[tuple[str, int], dict[str, float]] = {}
    try:
        with scratch("swell-store-concurrency-") as name:
            tmp = Path(name)
            found = codes(tmp)
            note_codes(found)
            for code in found:
                for runs in (1, RUNS):
                    got = measure(code, tmp / f"{code.name}-{runs}", runs)
                    figures[(code.name, runs)] = got
                    print(
                        f"  {code.name} {runs:>3} run(s): {got['events_per_s']:8.0f} events/s  "
                        f"commit p50 {got['p50_ms']:6.2f} ms  p95 {got['p95_ms']:7.2f} ms  "
                        f"p99 {got['p99_ms']:7.2f} ms  max {got['max_ms']:7.1f} ms",
                        flush=True,
                    )
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    print(f"\nsummary ({RUNS} runs at once; no goal: a baseline for scale-out)")
    print(f"  {'figure':<32} {'before':>10} {'after':>10} {'after/before':>13}")
    for key, label in (
        ("events_per_s", "events/s, all runs"),
        ("p50_ms", "commit latency p50 (ms)"),
        ("p95_ms", "commit latency p95 (ms)"),
        ("p99_ms", "commit latency p99 (ms)"),
    ):
        after = figures[("after", RUNS)][key]
        before = figures[("before", RUNS)][key] if ("before", RUNS) in figures else None
        cell = f"{before:10.1f}" if before is not None else f"{'n/a':>10}"
        print(f"  {label:<32} {cell} {after:10.1f} {ratio(after, before):>13}")
    alone = figures[("after", 1)]
    together = figures[("after", RUNS)]
    print(
        f"  after, {RUNS} runs against 1 alone: {together['events_per_s'] / alone['events_per_s']:.2f}x "
        f"the events/s, {together['p95_ms'] / alone['p95_ms']:.0f}x the p95 commit latency"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
