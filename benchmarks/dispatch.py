"""How quickly `swell watch` turns a work item into a run, and how many items a minute
one dispatcher sustains (issue 31).

A project with a one-command pipeline (`echo`) and a JSONL queue:

- latency: the dispatcher polls every 0.2 s; an item is appended, and the time from
  the append to the first stored event of its run (`run.started`) is taken, one item
  at a time (`DISPATCH_BENCH_ITEMS`, default 12), p50 and p95;
- throughput: `DISPATCH_BENCH_BATCH` items (default 20) appended at once; items per
  minute from the append until every run has its first event;
- baseline, in the same run: the same runs started directly with
  `swell run echo --detach` (the same record-then-hand-on path, without the
  dispatcher's polling and dispatch keys), the same numbers. Ratios are watch/baseline.

Wall-clock times; nothing is judged (exit non-zero only when a run goes wrong).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ITEMS = int(os.environ.get("DISPATCH_BENCH_ITEMS", "12"))
BATCH = int(os.environ.get("DISPATCH_BENCH_BATCH", "20"))
SWELL = [sys.executable, "-m", "swell"]
MANIFEST = "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: bench}\n"
ECHO = """kind: WavePipeline
metadata: {name: echo}
steps:
  - {id: say, type: command, script: 'echo "got {{ input }}"'}
"""


def _project(root: Path) -> Path:
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / ".agents" / "pipelines" / "echo.yaml").write_text(ECHO)
    return root


def _first_events(state: Path) -> dict[str, float]:
    """run input -> the time of its run's first event (epoch seconds)."""
    from swell.store.location import open_store

    store = open_store(state / "state.db")
    try:
        found = {}
        for run in store.list_runs(limit=100_000):
            started = store.events_of_kind(run.id, ["run.started"])
            if started:
                stamp = datetime.fromisoformat(started[0].ts.replace("Z", "+00:00"))
                found[run.input or ""] = stamp.timestamp()
        return found
    finally:
        store.close()


def _wait(state: Path, inputs: set[str], timeout: float = 600) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _first_events(state)
        if inputs <= set(found):
            return found
        time.sleep(0.05)
    raise SystemExit(f"runs did not start within {timeout}s: {sorted(inputs - set(found))}")


def _append(queue: Path, item: str) -> float:
    with queue.open("a") as out:
        out.write(json.dumps({"id": item, "input": item}) + "\n")
    return time.time()


def watch_numbers(root: Path) -> tuple[list[float], float]:
    project, state = _project(root / "watch"), root / "watch-state"
    env = {**os.environ, "SWELL_STATE_DIR": str(state)}
    queue = project / "queue.jsonl"
    queue.touch()
    proc = subprocess.Popen(
        [*SWELL, "watch", "echo", "--source", "file:queue.jsonl", "--interval", "0.2"],
        cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.environ["SWELL_STATE_DIR"] = str(state)
    try:
        time.sleep(2)  # the dispatcher's start-up is not an item's latency
        latencies = []
        for n in range(ITEMS):
            appeared = _append(queue, f"lat-{n}")
            latencies.append(_wait(state, {f"lat-{n}"})[f"lat-{n}"] - appeared)
        start = time.time()
        names = {f"batch-{n}" for n in range(BATCH)}
        for name in sorted(names):
            _append(queue, name)
        found = _wait(state, names)
        per_minute = BATCH / (max(found[n] for n in names) - start) * 60
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            raise SystemExit(f"swell watch failed: {err}")
    return latencies, per_minute


def direct_numbers(root: Path) -> tuple[list[float], float]:
    project, state = _project(root / "direct"), root / "direct-state"
    env = {**os.environ, "SWELL_STATE_DIR": str(state)}
    os.environ["SWELL_STATE_DIR"] = str(state)

    def start(item: str) -> None:
        done = subprocess.run(
            [*SWELL, "run", "echo", "-i", item, "--detach", "-o", "quiet"],
            cwd=project, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"swell run --detach failed: {done.stderr}")

    latencies = []
    for n in range(ITEMS):
        appeared = time.time()
        start(f"lat-{n}")
        latencies.append(_wait(state, {f"lat-{n}"})[f"lat-{n}"] - appeared)
    begin = time.time()
    names = [f"batch-{n}" for n in range(BATCH)]
    for name in names:
        start(name)
    found = _wait(state, set(names))
    return latencies, BATCH / (max(found[n] for n in names) - begin) * 60


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="swell-dispatch-bench-") as tmp:
        root = Path(tmp)
        w_lat, w_rate = watch_numbers(root)
        d_lat, d_rate = direct_numbers(root)
    print(f"items: {ITEMS} for latency, {BATCH} at once for throughput; cores: {os.cpu_count()}")
    print(f"{'':24}{'swell watch':>14}{'swell run --detach':>20}{'ratio':>8}")
    for label, w, d in (
        ("latency p50 (s)", _p(w_lat, 0.5), _p(d_lat, 0.5)),
        ("latency p95 (s)", _p(w_lat, 0.95), _p(d_lat, 0.95)),
        ("items per minute", w_rate, d_rate),
    ):
        print(f"{label:24}{w:>14.2f}{d:>20.2f}{w / d:>8.2f}")
    print(
        f"mean latency: watch {statistics.mean(w_lat):.2f} s, direct {statistics.mean(d_lat):.2f} s"
    )


if __name__ == "__main__":
    main()
