"""Fifty runs writing to one store at once: how many events a second, how long a commit
waits?

Each run is its own process, as `swell run` is, with its own connection to one store;
all start together (each has created its run and waits) and commit the command loop's
batches (4 events a visit, a batch a visit) as fast as they can. Reported: events per
second over all of them, and each commit's latency (the `emit` call: waiting for the
write lock included) as percentiles and its maximum; the same for one run alone,
measured in the same run of this script.

Goals (issue 35, "stores under concurrency"):
- SQLite, 50 runs: no commit over 250 ms (a writer is never starved of the lock);
- Postgres, 50 runs: at least SQLite's events/s with commit p95 <= 20 ms.

Postgres is measured on $SWELL_BENCH_POSTGRES (a URL; each measurement takes a schema
of its own), else on a throwaway server started as the tests start theirs
(tests/postgres_server.py: fsync and synchronous_commit off); skipped, saying so,
where Postgres is not installed. CONCURRENCY_BENCH_RUNS (default 50) and
CONCURRENCY_BENCH_VISITS (visits per run, default 150) size it; before and after as
in store_lib.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from store_lib import PYTHON, REPO, BenchError, Code, codes, note_codes, ratio, scratch, verdict

RUNS = int(os.environ.get("CONCURRENCY_BENCH_RUNS", "50"))
VISITS = int(os.environ.get("CONCURRENCY_BENCH_VISITS", "150"))
SQLITE_MAX_MS = 250.0
POSTGRES_P95_MS = 20.0


def write(location: str, run_id: str, directory: str) -> dict[str, Any]:
    """One run's writer: create its run, say so, wait for the start, commit every
    batch, time each commit."""
    from store_lib import loop_batches

    from swell.store.location import open_store

    store = open_store(location)
    store.create_run(run_id=run_id, pipeline="loop", input_text="", workspace="/ws")
    batches = list(loop_batches(run_id, VISITS, VISITS // 3 + 1))
    (Path(directory) / f"ready-{run_id}").touch()
    go = Path(directory) / "go"
    while not go.exists():
        time.sleep(0.01)
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


def measure(code: Code, directory: Path, location: str, runs: int) -> dict[str, float]:
    directory.mkdir()
    subprocess.run(  # the schema first, so the writers do not all migrate at once
        [PYTHON, "-c", f"from swell.store.location import open_store; open_store({location!r}).close()"],
        env=code.env(),
        check=True,
    )  # fmt: skip
    procs = [
        subprocess.Popen(
            [PYTHON, __file__, "--worker", location, f"run-{n:03d}", str(directory)],
            env=code.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parent,
        )
        for n in range(runs)
    ]
    try:
        _wait_ready(directory, runs, procs)
        (directory / "go").touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            if proc.returncode != 0:
                raise BenchError(f"{code.name}: a writer failed:\n{err[-1500:]}")
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:  # none left waiting for a start that will not come
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    span = max(r["ended"] for r in results) - min(r["began"] for r in results)
    latencies = sorted(x for r in results for x in r["latencies"])
    cut = statistics.quantiles(latencies, n=100, method="inclusive")
    return {
        "events_per_s": sum(r["events"] for r in results) / span,
        "commits": len(latencies),
        "p50_ms": cut[49] * 1000,
        "p95_ms": cut[94] * 1000,
        "p99_ms": cut[98] * 1000,
        "max_ms": latencies[-1] * 1000,
    }


def _wait_ready(directory: Path, runs: int, procs: list[subprocess.Popen[str]]) -> None:
    """Until every writer has created its run (on a loaded machine fifty start-ups take
    many seconds: a writer still starting must not meet the others' commits)."""
    deadline = time.monotonic() + 600
    while len(list(directory.glob("ready-*"))) < runs:
        failed = [p for p in procs if p.poll() not in (None, 0)]
        if failed:
            raise BenchError(f"a writer failed to start:\n{failed[0].communicate()[1][-1500:]}")
        if time.monotonic() > deadline:
            raise BenchError("the writers did not all start within 10 minutes")
        time.sleep(0.05)


@contextlib.contextmanager
def postgres() -> Iterator[Any]:
    """A function giving a fresh schema's URL, or None when there is no Postgres."""
    url = os.environ.get("SWELL_BENCH_POSTGRES")
    sys.path.insert(0, str(REPO / "tests"))
    try:
        import psycopg  # noqa: F401

        from postgres_server import PostgresServer, binaries, start, stop
    except ImportError as exc:
        print(f"  postgres: not measured ({exc})")
        yield None
        return
    if url:
        yield lambda: _schema(url)
        return
    if binaries() is None:
        print("  postgres: not measured (not installed: no initdb)")
        yield None
        return
    with scratch("swell-bench-pg-") as name:
        server: PostgresServer = start(Path(name))
        try:
            yield server.fresh_schema
        finally:
            stop(server)


def _schema(url: str) -> str:
    import psycopg
    from psycopg import sql

    name = f"bench_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{name}"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(write(*sys.argv[2:5])))
        return 0
    print(f"concurrency benchmark: {RUNS} runs at once on one store, {VISITS} visits each")
    figures: dict[tuple[str, str, int], dict[str, float]] = {}
    try:
        with scratch("swell-store-concurrency-") as name, postgres() as schema:
            tmp = Path(name)
            found = codes(tmp)
            note_codes(found)
            backends = ["sqlite", "postgres"] if schema else ["sqlite"]
            for backend in backends:
                for code in found:
                    for runs in (1, RUNS):
                        where = tmp / f"{backend}-{code.name}-{runs}"
                        location = str(where / "state.db") if backend == "sqlite" else schema()
                        try:
                            got = measure(code, where, location, runs)
                        except BenchError as exc:
                            if code.name == "after":
                                raise
                            # the code before may fail under the load it is measured at
                            last = str(exc).strip().splitlines()[-1]
                            print(f"  {backend:<8} {code.name:<6} {runs:>3} run(s): FAILED: {last}")
                            continue
                        figures[(backend, code.name, runs)] = got
                        print(
                            f"  {backend:<8} {code.name:<6} {runs:>3} run(s): "
                            f"{got['events_per_s']:8.0f} events/s  commit p50 {got['p50_ms']:6.2f} ms  "
                            f"p95 {got['p95_ms']:7.2f} ms  p99 {got['p99_ms']:7.2f} ms  "
                            f"max {got['max_ms']:7.1f} ms",
                            flush=True,
                        )
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    _summary(figures)
    return 0


def _summary(figures: dict[tuple[str, str, int], dict[str, float]]) -> None:
    print(f"\nsummary ({RUNS} runs at once)")
    print(f"  {'figure':<42} {'before':>10} {'after':>10} {'after/before':>13}")
    for backend in ("sqlite", "postgres"):
        if (backend, "after", RUNS) not in figures:
            continue
        for key, label in (
            ("events_per_s", "events/s, all runs"),
            ("p50_ms", "commit latency p50 (ms)"),
            ("p95_ms", "commit latency p95 (ms)"),
            ("p99_ms", "commit latency p99 (ms)"),
            ("max_ms", "commit latency max (ms)"),
        ):
            after = figures[(backend, "after", RUNS)][key]
            got = figures.get((backend, "before", RUNS))
            before = got[key] if got else None
            cell = f"{before:10.1f}" if before is not None else f"{'n/a':>10}"
            print(f"  {backend + ' ' + label:<42} {cell} {after:10.1f} {ratio(after, before):>13}")
    sqlite = figures[("sqlite", "after", RUNS)]
    print(
        f"  goal: SQLite, {RUNS} runs, no commit over {SQLITE_MAX_MS:.0f} ms: "
        f"max {sqlite['max_ms']:.1f} ms, p99 {sqlite['p99_ms']:.1f} ms  "
        f"{verdict(sqlite['max_ms'] <= SQLITE_MAX_MS)}"
    )
    pg = figures.get(("postgres", "after", RUNS))
    if pg is None:
        print("  goal: Postgres: not measured")
        return
    ok = pg["events_per_s"] >= sqlite["events_per_s"] and pg["p95_ms"] <= POSTGRES_P95_MS
    one = figures[("postgres", "after", 1)]
    print(
        f"  goal: Postgres, {RUNS} runs, >= SQLite's events/s ({sqlite['events_per_s']:.0f}) with "
        f"commit p95 <= {POSTGRES_P95_MS:.0f} ms: {pg['events_per_s']:.0f} events/s, "
        f"p95 {pg['p95_ms']:.1f} ms (1 run alone: {one['events_per_s']:.0f} events/s)  "
        f"{verdict(ok)}"
    )


if __name__ == "__main__":
    sys.exit(main())
