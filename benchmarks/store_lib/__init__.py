"""What the store benchmarks (benchmarks/store_*.py) share: the code measured "before",
worker processes, the events of a command loop, and the report lines.

Before and after are measured in the same run, on the same machine, interleaved:
"after" is the swell this checkout holds; "before" is the `src/` of
$SWELL_BASELINE_SRC, or else of BEFORE_COMMIT taken out of git into a temporary
directory (`git archive`: the checkout and its state are not touched). Without
either, only "after" is measured. Every measurement runs in a fresh worker process
(`python BENCHMARK --worker ...`) with that code first on its path, so both pay the
same start-up and neither sees the other's modules.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BEFORE_COMMIT = "afc3249"  # swell before the store work of the "Speed" issue
PYTHON = sys.executable
RUN_ID = "loop-20261124-000000-bench"

IMPLEMENT = "echo change >> work.txt"


def test_command(iterations: int) -> str:
    return f"test $(grep -c . work.txt) -ge {iterations}"


# ------------------------------------------------------------------ the code measured


@dataclass(frozen=True)
class Code:
    """One swell to measure: `src` first on the path, or the installed one (None)."""

    name: str
    src: Path | None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "PYTHONPATH")}
        if self.src is not None:
            env["PYTHONPATH"] = str(self.src)
        return env

    def swell(self) -> list[str]:
        return [PYTHON, "-m", "swell"]


def codes(tmp: Path) -> list[Code]:
    """Before (when there is one to measure) and after."""
    before = before_src(tmp)
    after = Code("after", REPO / "src")  # this checkout's, not whichever swell is installed
    return [Code("before", before), after] if before else [after]


def before_src(tmp: Path) -> Path | None:
    override = os.environ.get("SWELL_BASELINE_SRC")
    if override:
        return Path(override).resolve()
    if shutil.which("git") is None:
        return None
    archive = tmp / "before.tar"
    with archive.open("wb") as out:
        made = subprocess.run(
            ["git", "-C", str(REPO), "archive", BEFORE_COMMIT, "src"],
            stdout=out,
            stderr=subprocess.DEVNULL,
        )
    if made.returncode != 0:
        return None
    target = tmp / "before"
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    # bytecode, as this checkout's has: no process of either pays for compiling
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(target / "src")], check=False)
    return target / "src"


def note_codes(found: Sequence[Code]) -> None:
    for code in found:
        where = code.src or "this checkout"
        print(f"  {code.name:<6} = {where}")
    if len(found) == 1:
        print(f"  (no 'before': set SWELL_BASELINE_SRC, or fetch commit {BEFORE_COMMIT})")


# ------------------------------------------------------------------ workers


class BenchError(Exception):
    """Something did not run correctly: the figures would mean nothing."""


def worker(script: str, code: Code, *args: str, timeout: float = 900) -> dict[str, Any]:
    """Run `python SCRIPT --worker ARGS` with `code`; its last line of output, as JSON."""
    argv = [PYTHON, script, "--worker", *args]
    proc = subprocess.run(
        argv, env=code.env(), capture_output=True, text=True, timeout=timeout, cwd=REPO
    )
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise BenchError(f"{code.name} worker {' '.join(args)} failed:\n{tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------ a command loop


def write_project(root: Path, iterations: int) -> None:
    """A Wave project whose pipeline `loop` is implement -> run-tests -> gate, routing
    back to implement until the tests pass (as benchmarks/loop_overhead.py)."""
    limit = iterations + 10
    (root / ".agents" / "pipelines").mkdir(parents=True, exist_ok=True)
    (root / "wave.yaml").write_text(
        "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: store-bench}\n"
        "runtime: {circuit_breaker: {limit: 100000000}}\n"
    )
    (root / ".agents" / "pipelines" / "loop.yaml").write_text(
        f"""kind: WavePipeline
metadata: {{name: loop}}
max_step_visits: {3 * iterations + 30}
steps:
  - {{id: implement, type: command, max_visits: {limit}, script: "{IMPLEMENT}"}}
  - id: run-tests
    type: command
    dependencies: [implement]
    max_visits: {limit}
    script: "{test_command(iterations)}"
  - id: gate
    type: conditional
    dependencies: [run-tests]
    max_visits: {limit}
    edges:
      - {{target: _complete, condition: outcome=success}}
      - {{target: implement}}
"""
    )


def loop_batches(
    run_id: str, visits: int, iterations: int, workspace: str = "/ws"
) -> Iterator[list[Any]]:
    """The batches the run loop commits for the loop pipeline of `iterations` (3 visits
    each, 4 events a visit), stamped, until `visits` visits finished: the run is left
    going (its next visit started) unless `visits` is 3 * iterations (then it ends)."""
    from swell.events import models as ev

    seq = 0
    clock = 1_795_500_000_000  # ms; a batch a millisecond

    def stamped(events: list[Any]) -> list[Any]:
        nonlocal seq, clock
        clock += 1
        ts = _iso(clock)
        for event in events:
            seq += 1
            event.run_id, event.seq, event.ts = run_id, seq, ts
        return events

    yield stamped(
        [
            ev.RunStarted(pipeline="loop", workspace=workspace),
            ev.StepQueued(step_id="implement", reason="entry"),
            ev.StepStarted(step_id="implement", visit=1, kind="command", detail=IMPLEMENT),
        ]
    )
    rounds = 0
    for n in range(1, iterations + 1):
        last = n == iterations
        metadata: dict[str, Any] = {"outcome": "success", "exit_code": 0, "duration_ms": 2}
        rounds += 1
        yield stamped(
            [
                ev.StepFinished(
                    step_id="implement", visit=n, outcome="success", exit_code=0,
                    duration_ms=2, output_tail="",
                ),
                ev.RoundRecorded(
                    step_id="implement", visit=n, round=rounds, role="implement", metadata=metadata
                ),
                ev.StepQueued(
                    step_id="run-tests", reason="dependency", source_step="implement", source_visit=n
                ),
                ev.StepStarted(
                    step_id="run-tests", visit=n, kind="command", detail=test_command(iterations),
                    source_step="implement", source_visit=n,
                ),
            ]
        )  # fmt: skip
        if 3 * n - 2 >= visits:
            return
        outcome = "success" if last else "failure"
        failed = {} if last else {"error": "exit code 1", "error_key": "exit code <n>"}
        rounds += 1
        yield stamped(
            [
                ev.StepFinished(
                    step_id="run-tests", visit=n, outcome=outcome, exit_code=0 if last else 1,
                    duration_ms=3, output_tail="", **failed,
                ),
                ev.RoundRecorded(
                    step_id="run-tests", visit=n, round=rounds, role="run-tests",
                    content="" if last else "exit code 1",
                    metadata={"outcome": outcome, "exit_code": 0 if last else 1, "duration_ms": 3},
                ),
                ev.StepQueued(
                    step_id="gate", reason="dependency", source_step="run-tests", source_visit=n
                ),
                ev.StepStarted(
                    step_id="gate", visit=n, kind="conditional", progress="hidden",
                    source_step="run-tests", source_visit=n,
                ),
            ]
        )  # fmt: skip
        if 3 * n - 1 >= visits:
            return
        if last:
            yield stamped(
                [
                    ev.StepFinished(step_id="gate", visit=n, outcome="success"),
                    ev.RouteTaken(
                        step_id="gate", visit=n, target="_complete",
                        condition="outcome=success", outcome="success",
                    ),
                    ev.RunFinished(status="succeeded", visits=3 * n, duration_ms=1000),
                ]
            )  # fmt: skip
            return
        yield stamped(
            [
                ev.StepFinished(
                    step_id="gate", visit=n, outcome="failure", error="'run-tests' failed"
                ),
                ev.RouteTaken(step_id="gate", visit=n, target="implement", outcome="failure"),
                ev.StepQueued(step_id="implement", reason="edge", source_step="gate", source_visit=n),
                ev.StepStarted(
                    step_id="implement", visit=n + 1, kind="command", detail=IMPLEMENT,
                    source_step="gate", source_visit=n,
                ),
            ]
        )  # fmt: skip
        if 3 * n >= visits:
            return


def _iso(ms: int) -> str:
    from datetime import UTC, datetime, timedelta

    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ------------------------------------------------------------------ reporting


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def ratio(after: float, before: float | None) -> str:
    return f"{after / before:5.2f}x" if before else "  n/a"


def scratch(prefix: str) -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix=prefix)
