"""How `swell validate` and the dashboard's run graph grow with a pipeline's size.

Generates chains of command steps (each depends on the one before and renders a
template) and times, CPU time of this process (the machine is shared; wall time
follows it when the machine is idle):

- validation (`validate_project`, what `swell validate` and the dashboard's
  /pipelines run) of 5,000, 10,000 and 20,000 steps;
- the run graph's layout and SVG (`render_svg`) of the same chains;
- `swell validate` itself, the command a user runs, on the 10,000-step chain, goal
  < 3 s: judged on the process's CPU time, which is its wall time on an idle machine
  (its wall time is printed too).

The ratio 20k/10k is the baseline measured in the same run: linear work gives 2,
quadratic work 4 (before this benchmark, 10,000 steps took 63 s and 20,000 25 min).
A 20,000-step chain is past the YAML reader's limits (100,000 values, 1 MiB a
file: docs/security.md), so for that size alone they are raised in this process.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from store_lib import verdict

from swell.manifest import yamlparse, yamlsrc
from swell.manifest.validation import validate_project
from swell.runtime import open_registries
from swell.web.graph import RunState, graph_of, render_svg

SIZES = (5_000, 10_000, 20_000)
GOAL_SECONDS = 3.0


def chain(n: int) -> str:
    lines = ["kind: WavePipeline", "metadata: {name: chain}", "input: {source: cli}", "steps:"]
    for i in range(n):
        dep = f", dependencies: [s{i - 1}]" if i else ""
        lines.append(f"  - {{id: s{i}{dep}, script: 'echo {{{{ input }}}} {i}'}}")
    return "\n".join(lines) + "\n"


def project(root: Path, n: int) -> Path:
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text("apiVersion: v1\nkind: WaveManifest\nmetadata: {name: b}\n")
    (root / ".agents" / "pipelines" / "chain.yaml").write_text(chain(n))
    return root


def cpu(work: Callable[..., object], *args: object) -> float:
    start = time.process_time()
    work(*args)
    return time.process_time() - start


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    lint = open_registries().lint_context()
    # see the docstring: 20,000 steps only
    yamlparse.MAX_VALUES = 10 * max(SIZES)
    yamlsrc.MAX_BYTES = 100 * max(SIZES)
    validate: dict[int, float] = {}
    layout: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="swell-scale-bench-") as tmp:
        for n in SIZES:
            root = project(Path(tmp) / str(n), n)
            found = validate_project(root, lint, None)
            if found.errors:
                print(f"the {n}-step chain did not validate: {found.errors[:3]}")
                return 1
            validate[n] = min(cpu(validate_project, root, lint, None) for _ in range(2))
            graph = graph_of(chain(n), "chain")
            assert graph is not None
            layout[n] = min(cpu(render_svg, graph, RunState()) for _ in range(5))
            print(f"  {n:6,} steps: validate {validate[n]:6.2f} s, graph {layout[n]:6.3f} s (CPU)")
        root = Path(tmp) / str(10_000)
        env = {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}
        start, before = time.perf_counter(), _children_cpu()
        done = subprocess.run(
            [sys.executable, "-m", "swell", "validate"], cwd=root, env=env, capture_output=True
        )
        wall, used = time.perf_counter() - start, _children_cpu() - before
        if done.returncode != 0:
            print(f"swell validate failed: {done.stderr.decode()[-500:]}")
            return 1
    grow = validate[20_000] / validate[10_000]
    grow_graph = layout[20_000] / max(layout[10_000], 1e-6)
    print(f"validate 20k/10k: {grow:.2f}x (goal < 2.5, linear)  {verdict(grow < 2.5)}")
    print(f"run graph 20k/10k: {grow_graph:.2f}x (goal < 2.5, linear)  {verdict(grow_graph < 2.5)}")
    print(
        f"swell validate, 10,000-step chain: {used:.2f} s CPU, {wall:.2f} s wall "
        f"(goal < {GOAL_SECONDS:.0f}, CPU)  {verdict(used < GOAL_SECONDS)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
