"""Is the cost of looking at a run flat in its length? A 30,000-visit run against a
300-visit run, both still running, in one store.

- `swell logs RUN` (its default view) and `swell status RUN`, each a fresh process
  as a person types it (RUN_LENGTH_SAMPLES rounds, interleaved; medians);
- the dashboard's stream of the run joined at its end (`/api/runs/RUN/stream?after=
  LAST-100`, as the run page does): from the request to its 100th event, over HTTP
  from a real `swell serve`;
- the events API's last page (`/api/runs/RUN/events?after=LAST-1000`).

Goal (issue 35): each within 20% of the 300-visit run's (ratio <= 1.2). "before" is
the swell of $SWELL_BASELINE_SRC (its `src/`) when it is set, measured the same way
on the same store.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from store_lib import PYTHON, REPO, loop_batches, verdict, write_project
from web_fanout import Client, serve, sse

LONG, SHORT = 30_000, 300
SAMPLES = int(os.environ.get("RUN_LENGTH_SAMPLES", "7"))
GOAL = 1.2
RUNS = {LONG: "loop-20261128-000000-long", SHORT: "loop-20261128-000000-short"}


def build(root: Path) -> dict[int, int]:
    """Both runs, left running (their next visit started); their last seqs."""
    from swell.store.location import open_store

    write_project(root, LONG // 3 + 1)
    store = open_store(root / ".swell" / "state.db")
    last = {}
    for visits, run_id in RUNS.items():
        store.create_run(run_id=run_id, pipeline="loop", input_text="", workspace=str(root))
        for batch in loop_batches(run_id, visits, LONG // 3 + 1, workspace=str(root)):
            store.emit(batch)
        last[visits] = store.get_run(run_id).last_seq
    store.close()
    return last


def reuse(root: Path) -> dict[int, int]:
    from swell.store.location import open_store

    store = open_store(root / ".swell" / "state.db")
    try:
        return {visits: store.get_run(run_id).last_seq for visits, run_id in RUNS.items()}
    finally:
        store.close()


def env_for(src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "SWELL_STORE")}
    env.pop("PYTHONPATH", None)
    if src:
        env["PYTHONPATH"] = src
    return env


def cli(root: Path, src: str | None, *args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [PYTHON, "-m", "swell", *args], cwd=root, env=env_for(src), capture_output=True
    )
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"FAILED: swell {' '.join(args)}: {proc.stderr.decode()[-400:]}")
    return took * 1000


async def stream_tail(port: int, run_id: str, last: int) -> float:
    client = Client()
    start = time.perf_counter()
    await asyncio.wait_for(
        sse(port, f"/api/runs/{run_id}/stream?after={last - 100}", client, last), 60
    )
    return (time.perf_counter() - start) * 1000


def web(root: Path, src: str | None, last: dict[int, int]) -> dict[tuple[str, int], list[float]]:
    proc, port = serve(root, src)
    times: dict[tuple[str, int], list[float]] = {}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            for r in range(SAMPLES + 1):
                for visits, run_id in RUNS.items():
                    took = asyncio.run(stream_tail(port, run_id, last[visits]))
                    start = time.perf_counter()
                    got = http.get(f"/api/runs/{run_id}/events?after={last[visits] - 1000}")
                    page = (time.perf_counter() - start) * 1000
                    assert got.status_code == 200 and len(got.json()) == 1000
                    if r:  # the first round warms the server
                        times.setdefault(("stream: its last 100 events", visits), []).append(took)
                        times.setdefault(("events API: its last page", visits), []).append(page)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return times


def measure(root: Path, src: str | None, last: dict[int, int]) -> dict[tuple[str, int], float]:
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(SAMPLES):
        for visits, run_id in RUNS.items():
            for label, args in (
                ("swell logs RUN", ["logs", run_id]),
                ("swell status RUN", ["status", run_id]),
            ):
                times.setdefault((label, visits), []).append(cli(root, src, *args))
    times.update(web(root, src, last))
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> int:
    baseline = os.environ.get("SWELL_BASELINE_SRC")
    kept = os.environ.get("RUN_LENGTH_PROJECT")  # a project this benchmark built before
    with tempfile.TemporaryDirectory(prefix="swell-run-length-") as tmp:
        root = Path(kept or tmp)
        start = time.perf_counter()
        last = reuse(root) if kept and (root / ".swell").exists() else build(root)
        print(
            f"run length: runs of {LONG:,} and {SHORT:,} visits ({last[LONG]:,} and "
            f"{last[SHORT]:,} events), built in {time.perf_counter() - start:.1f} s; "
            f"{SAMPLES} samples, medians in ms",
            flush=True,
        )
        found = {}
        for name, src in (("before", baseline), ("after", str(REPO / "src"))):
            if name == "before" and not src:
                print("  (no 'before': set SWELL_BASELINE_SRC to a swell src/ to compare)")
                continue
            found[name] = measure(root, src, last)
    labels = list(dict.fromkeys(label for label, _ in found["after"]))
    print(f"\n  {'':<30} {'':>7} {f'{SHORT:,}':>8} {f'{LONG:,}':>8} {'ratio':>7}  goal <= {GOAL}x")
    for label in labels:
        for name, got in found.items():
            short, long = got[(label, SHORT)], got[(label, LONG)]
            ok = verdict(long / short <= GOAL) if name == "after" else ""
            print(f"  {label:<30} {name:>7} {short:>8.1f} {long:>8.1f} {long / short:>6.2f}x  {ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
