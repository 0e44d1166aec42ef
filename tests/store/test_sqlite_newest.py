"""The newest runs that are no sub-pipeline's (`swell status`, `swell logs` without a
run id) are read from the newest end of the runs, not from all of them: with 10,000
stored runs, SQLite took the parent index, which every top-level run matches, and
computed each run's visits and last event before sorting them (docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

from swell.store.sqlite.store import SqliteStore

RUNS = 1_000


def test_the_newest_top_level_runs_are_read_without_reading_every_run(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    for n in range(RUNS):
        store.create_run(run_id=f"r-{n:05d}", pipeline="p", input_text="", workspace="/ws")
    store.create_run(
        run_id="child", pipeline="p", input_text="", workspace="/ws", parent_run_id="r-00999"
    )
    steps = 0

    def step() -> int:  # called every 1,000 SQLite virtual machine instructions
        nonlocal steps
        steps += 1
        return 0

    store.db.set_progress_handler(step, 1_000)
    try:
        newest = store.list_runs(2, include_children=False)
    finally:
        store.db.set_progress_handler(None, 0)
        store.close()
    assert [r.id for r in newest] == ["r-00999", "r-00998"]
    # the two newest runs' columns: under a thousand instructions; reading every run's
    # counters first took 66,000 here (runs without events)
    assert steps < 10, steps
