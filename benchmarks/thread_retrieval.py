"""Does `swell thread` cost depend on the budget rather than on the run's length?

Builds two state databases with one run each, of 1,000 and of 1,000,000 recorded
rounds in one thread (inserted directly: this measures reading, not writing), then:

1. in-process retrieval with the default budget of 8000 characters, on the default
   page and with `--before` in the middle of the run: median time per call on each
   database, and the ratio large/small (goal: at most 2x);
2. the whole `swell thread RUN` process against the large database, against
   `swell --version` (goal: at most 2x), median of several runs each.

Absolute times are printed for context only; the machine may be noisy.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from swell.store.location import open_store
from swell.store.protocols import Store
from swell.threads.retrieval import retrieve

RUN = "bench-20261122-000000-00000000"
THREAD = "impl"
SIZES = (1_000, 1_000_000)
CALLS = 200
PROCESS_SAMPLES = 7
SWELL = str(Path(sys.executable).parent / "swell")


def build(state: Path, rounds: int) -> Path:
    """A state database holding one run of `rounds` rounds; written with plain SQL."""
    path = state / "state.db"
    open_store(path).close()  # creates the schema
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    db.execute(
        "INSERT INTO runs (id, pipeline, status, input, created_at, updated_at) "
        "VALUES (?, 'bench', 'succeeded', '', '2026-11-22T00:00:00Z', '2026-11-22T00:00:00Z')",
        (RUN,),
    )
    meta = json.dumps({"outcome": "failure", "exit_code": 1, "duration_ms": 12})
    content = "FAILED tests/test_feature.py::test_case - AssertionError: expected 3, got 2\n" * 3
    db.executemany(
        "INSERT INTO rounds (run_id, round, thread, thread_round, step_id, visit, role, persona, ts, "
        "metadata, content) VALUES (?, ?, ?, ?, 'run-tests', ?, 'run-tests', NULL, "
        "'2026-11-22T00:00:00.000Z', ?, ?)",
        ((RUN, n, THREAD, n, n, meta, content) for n in range(1, rounds + 1)),
    )
    db.execute("COMMIT")
    db.close()
    return path


def per_call(fn: Callable[[], object], calls: int = CALLS) -> float:
    fn()  # warm the page cache
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def process_time(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    samples = []
    for _ in range(PROCESS_SAMPLES):
        start = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="swell-thread-bench-") as tmp:
        root = Path(tmp)
        stores: dict[int, Store] = {}
        for size in SIZES:
            started = time.perf_counter()
            stores[size] = open_store(build(root / f"state-{size}", size))
            print(f"built {size:>9,} rounds in {time.perf_counter() - started:.1f}s")
        print("\nin-process retrieval, budget 8000 (median per call)")
        ratios = []
        for label, before in (("default page", None), ("--before middle", "mid")):
            times = {}
            for size, store in stores.items():
                at = size // 2 if before else None
                page = retrieve(store, RUN, THREAD, 8000, at)
                assert page.tail, "retrieval returned nothing"
                times[size] = per_call(partial(retrieve, store, RUN, THREAD, 8000, at))
            ratio = times[SIZES[1]] / times[SIZES[0]]
            ratios.append(ratio)
            print(
                f"  {label:<16} {times[SIZES[0]] * 1e3:7.3f} ms (1k)  {times[SIZES[1]] * 1e3:7.3f} ms (1M)"
                f"  ratio {ratio:.2f}x  (goal <= 2x)"
            )
        project = root / "project"
        project.mkdir()
        (project / "wave.yaml").write_text("kind: WaveManifest\n")
        env = {**os.environ, "SWELL_STATE_DIR": str(root / f"state-{SIZES[1]}")}
        thread_s = process_time([SWELL, "thread", RUN, "--thread", THREAD], env, project)
        version_s = process_time([SWELL, "--version"], env, project)
        print("\nwhole process (median of 7)")
        print(f"  swell thread RUN (1M rounds) {thread_s * 1e3:7.1f} ms")
        print(f"  swell --version              {version_s * 1e3:7.1f} ms")
        print(f"  ratio {thread_s / version_s:.2f}x  (goal <= 2x)")
        for store in stores.values():
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
