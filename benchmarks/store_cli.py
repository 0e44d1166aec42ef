"""How fast are `swell list`, `swell status` and `swell logs` on a store of 10,000 runs?

Goal (docs/performance.md, "The store"): each at most 120 ms, `status` of a
30,000-visit run included. They read the store only (no wave.yaml, no engine), and
`status` counts a run's visits per step in SQL.

A project's store gets one run of 30,000 visits of the command loop, then 10,000
finished runs of 3 visits (written straight into the store through its own API,
as the run loop commits them). Each command then runs as a fresh process, as a
person types it; `python -c pass` and `swell --version` are the floor. Before and
after run interleaved (CLI_BENCH_SAMPLES rounds, default 9); medians and minima.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from store_lib import (
    PYTHON,
    RUN_ID,
    BenchError,
    Code,
    codes,
    median,
    note_codes,
    ratio,
    scratch,
    verdict,
    worker,
    write_project,
)

RUNS = 10_000
BIG = 30_000
SAMPLES = int(os.environ.get("CLI_BENCH_SAMPLES", "9"))
GOAL = 0.120
SMALL_RUN = f"loop-small-{RUNS - 1:05d}"
COMMANDS: dict[str, list[str]] = {
    "swell --version": ["--version"],
    "swell list": ["list"],
    "swell status (newest run)": ["status"],
    f"swell status ({BIG}-visit run)": ["status", RUN_ID],
    "swell logs (a 3-visit run)": ["logs", SMALL_RUN],
}
JUDGED = [name for name in COMMANDS if name != "swell --version"]


def build(directory: str) -> dict[str, Any]:
    from store_lib import loop_batches

    from swell.store.location import open_store

    project = Path(directory)
    write_project(project, BIG // 3 + 1)
    store = open_store(project / ".swell" / "state.db")
    fields = {"pipeline": "loop", "input_text": "", "workspace": "/ws"}
    store.create_run(run_id=RUN_ID, **fields)
    for batch in loop_batches(RUN_ID, BIG, BIG // 3 + 1):
        store.emit(batch)
    for n in range(RUNS):
        run_id = f"loop-small-{n:05d}"
        store.create_run(run_id=run_id, **fields)
        for batch in loop_batches(run_id, 3, 1):
            store.emit(batch)
    store.close()
    return {"runs": RUNS + 1}


def timed(code: Code, args: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        [*code.swell(), *args], cwd=cwd, env=code.env(), capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise BenchError(f"{code.name}: swell {' '.join(args)} failed: {proc.stderr[-500:]}")
    return seconds, proc.stdout


def check(code: Code, project: Path) -> None:
    """The commands show what was stored (and the same as before, where both ran)."""
    _, out = timed(code, ["status", RUN_ID, "-o", "json"], project)
    status = json.loads(out)
    if status["status"] != "running" or len(status["steps"]) != BIG + 1:
        raise BenchError(f"{code.name}: status of the big run reads {status['status']}")
    _, out = timed(code, ["list", "-n", "3"], project)
    if SMALL_RUN not in out:
        raise BenchError(f"{code.name}: `swell list` does not show {SMALL_RUN}")


def main() -> int:
    if len(sys.argv) > 3 and sys.argv[1] == "--worker":
        print(json.dumps(build(sys.argv[3])))
        return 0
    print(f"CLI benchmark: {RUNS} runs and one of {BIG} visits, {SAMPLES} samples")
    times: dict[tuple[str, str], list[float]] = {}
    outputs: dict[tuple[str, str], str] = {}
    try:
        with scratch("swell-store-cli-") as name:
            tmp = Path(name)
            found = codes(tmp)
            note_codes(found)
            for code in found:
                start = time.perf_counter()
                worker(__file__, code, "build", str(tmp / code.name), timeout=1800)
                print(f"  built {code.name}'s store in {time.perf_counter() - start:.1f}s")
                check(code, tmp / code.name)
            floor: list[float] = []
            for r in range(SAMPLES):
                start = time.perf_counter()
                subprocess.run([PYTHON, "-c", "pass"], check=True)
                floor.append(time.perf_counter() - start)
                for code in found[r % len(found) :] + found[: r % len(found)]:
                    for label, args in COMMANDS.items():
                        seconds, out = timed(code, args, tmp / code.name)
                        times.setdefault((code.name, label), []).append(seconds)
                        outputs[(code.name, label)] = out
            print(f"  (python -c pass: median {median(floor) * 1000:.0f} ms)")
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    names = [c.name for c in found]
    print("\nsummary (ms: median [min])")
    print(f"  {'command':<34} {'before':>14} {'after':>14} {'after/before':>13}  goal")
    for label in COMMANDS:
        cells = {}
        for name in ("before", "after"):
            got = times.get((name, label))
            cells[name] = f"{median(got) * 1000:.0f} [{min(got) * 1000:.0f}]" if got else "n/a"
        after = median(times[("after", label)])
        before_times = times.get(("before", label))
        before = median(before_times) if before_times else None
        judged = f"<= {GOAL * 1000:.0f} ms  {verdict(after <= GOAL)}" if label in JUDGED else ""
        print(
            f"  {label:<34} {cells['before']:>14} {cells['after']:>14} "
            f"{ratio(after, before):>13}  {judged}"
        )
    if "before" in names:
        same = [
            label
            for label in COMMANDS
            if _same(outputs[("before", label)], outputs[("after", label)])
        ]
        print(
            f"\n  the same output before and after (but for created_at): {', '.join(same) or 'none'}"
        )
    return 0


def _same(before: str, after: str) -> bool:
    """The same text, but for when each store was made (the runs' created_at)."""
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
    return stamp.sub("T", before) == stamp.sub("T", after)


if __name__ == "__main__":
    sys.exit(main())
