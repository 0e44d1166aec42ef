"""How quickly `swell watch` turns a work item into a run, and how many items a minute
one dispatcher sustains (issue 31).

A project with a one-command pipeline (`echo`) and a JSONL queue:

- latency: the dispatcher polls every 0.2 s; an item is appended, and the time from
  the append to the first stored event of its run (`run.started`) is taken, one item
  at a time (`DISPATCH_BENCH_ITEMS`, default 12), p50 and p95;
- throughput: `DISPATCH_BENCH_BATCH` items (default 20) appended at once; items per
  minute from the append until every run has its first event;
- webhooks: a `swell serve` with `runtime.routing.default: echo` is sent signed GitHub
  deliveries one at a time (`DISPATCH_BENCH_ITEMS`); the time from sending each to
  the first stored event of its run, p50 and p95, and the time to the server's 202
  answer (GitHub gives up after 10 s);
- baseline, in the same run: the same runs started directly with
  `swell run echo --detach` (the same record-then-hand-on path, without the
  dispatcher's polling and dispatch keys), the same numbers. Ratios are
  watch/baseline and webhook/baseline.

Each row has a goal and says PASS or FAIL: the service's latency no worse than
starting the run by hand (ratio <= 1.0), a dispatcher at least as many items a minute
as `swell run --detach` one after another (ratio >= 1.0), the webhook's answer p95
within GitHub's 10 s. Wall-clock times on a shared machine: run it with the load
said. Exits non-zero when a run goes wrong, not when a goal is missed.
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


SECRET = "bench-webhook-secret"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _deliver(url: str, item: str) -> float:
    """Send a signed GitHub `issues` delivery whose issue URL (the run's input) is
    `item`; the seconds until the server answered 202."""
    import hashlib
    import hmac

    import httpx

    body = json.dumps({"action": "opened", "issue": {"html_url": item, "title": item}}).encode()
    sig = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": item,
        "X-Hub-Signature-256": f"sha256={sig}",
        "Content-Type": "application/json",
    }
    sent = time.monotonic()
    answer = httpx.post(f"{url}/api/hooks/github", content=body, headers=headers, timeout=120)
    if answer.status_code != 202:
        raise SystemExit(f"webhook answered {answer.status_code}: {answer.text}")
    return time.monotonic() - sent


def webhook_numbers(root: Path) -> tuple[list[float], list[float]]:
    """(arrival -> first event, arrival -> 202 answer) per delivery, in seconds."""
    import httpx

    project, state = _project(root / "hooks"), root / "hooks-state"
    (project / "wave.yaml").write_text(MANIFEST + "runtime:\n  routing: {default: echo}\n")
    env = {**os.environ, "SWELL_STATE_DIR": str(state), "SWELL_WEBHOOK_SECRET": SECRET}
    port = _free_port()
    proc = subprocess.Popen(
        [*SWELL, "serve", "--port", str(port), "--token", "bench-token"],
        cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.environ["SWELL_STATE_DIR"] = str(state)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # the server's start-up is not a delivery's latency
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("swell serve did not come up")
            time.sleep(0.2)
        latencies, answers = [], []
        for n in range(ITEMS):
            item = f"hook-{n}"
            sent = time.time()
            answers.append(_deliver(url, item))
            latencies.append(_wait(state, {item})[item] - sent)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    return latencies, answers


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


def _row(label: str, value: float, base: float | None, goal: str, ok: bool) -> None:
    ratio = f"{value / base:>8.2f}" if base else f"{'':>8}"
    shown = f"{base:>20.2f}" if base is not None else f"{'':>20}"
    print(f"{label:30}{value:>12.2f}{shown}{ratio}  {goal:<14}{'PASS' if ok else 'FAIL'}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="swell-dispatch-bench-") as tmp:
        root = Path(tmp)
        w_lat, w_rate = watch_numbers(root)
        h_lat, h_answer = webhook_numbers(root)
        d_lat, d_rate = direct_numbers(root)
    load = os.getloadavg()[0]
    print(
        f"items: {ITEMS} for latency, {BATCH} at once for throughput; cores: "
        f"{os.cpu_count()}; load average at the end: {load:.1f}"
    )
    print(f"{'':30}{'swell':>12}{'swell run --detach':>20}{'ratio':>8}  goal")
    for label, value, base in (
        ("watch latency p50 (s)", _p(w_lat, 0.5), _p(d_lat, 0.5)),
        ("watch latency p95 (s)", _p(w_lat, 0.95), _p(d_lat, 0.95)),
        ("webhook -> first event p50 (s)", _p(h_lat, 0.5), _p(d_lat, 0.5)),
        ("webhook -> first event p95 (s)", _p(h_lat, 0.95), _p(d_lat, 0.95)),
    ):
        _row(label, value, base, "ratio <= 1.0", value <= base)
    _row("watch items per minute", w_rate, d_rate, "ratio >= 1.0", w_rate >= d_rate)
    answer95 = _p(h_answer, 0.95)
    _row("webhook answer p95 (s)", answer95, None, "<= 10 s", answer95 <= 10)
    print(
        f"mean latency: watch {statistics.mean(w_lat):.2f} s, webhook "
        f"{statistics.mean(h_lat):.2f} s, direct {statistics.mean(d_lat):.2f} s; "
        f"webhook answer p50 {_p(h_answer, 0.5):.2f} s"
    )


if __name__ == "__main__":
    main()
