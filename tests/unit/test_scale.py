"""Work that grows linearly with a pipeline's size: `swell validate` and the dashboard's
run graph. Measured without a clock: the count of Python lines executed (a tracer's
`line` events, which fire on every loop iteration too) for n and 2n steps; quadratic
work pushes the ratio towards 4, linear work keeps it near 2. benchmarks/scale.py times them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from swell.manifest.validation import validate_project
from swell.runtime import open_registries
from swell.web.graph import RunState, graph_of, render_svg

N = 400  # steps of the smaller pipeline: enough for the quadratic part to show
# linear work doubles (2.0); the O(n²) template checks of before made validate 2.46
LINEAR = 2.25


def chain(n: int) -> str:
    """n command steps, each depending on the one before and rendering a template."""
    lines = ["kind: WavePipeline", "metadata: {name: big}", "steps:"]
    for i in range(n):
        dep = f", dependencies: [s{i - 1}]" if i else ""
        lines.append(f"  - {{id: s{i}{dep}, script: 'echo {{{{ input }}}} {i}'}}")
    return "\n".join(lines) + "\n"


def star(n: int) -> str:
    """One step that n steps depend on, and one step that depends on all n."""
    lines = ["kind: WavePipeline", "metadata: {name: big}", "steps:", "  - {id: root, script: x}"]
    lines += [f"  - {{id: s{i}, dependencies: [root], script: x}}" for i in range(n)]
    lines.append(
        f"  - {{id: end, script: x, dependencies: [{', '.join(f's{i}' for i in range(n))}]}}"
    )
    return "\n".join(lines) + "\n"


def lines_run(work: Callable[..., Any], *args: Any) -> tuple[int, Any]:
    """How many Python lines `work(*args)` executes (loop iterations included), and
    what it returned."""
    count = 0

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        result = work(*args)
    finally:
        sys.settrace(None)
    return count, result


def project(root: Path, text: str) -> Path:
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text("kind: WaveManifest\nmetadata: {name: big}\n")
    (root / ".agents" / "pipelines" / "big.yaml").write_text(text)
    return root


@pytest.mark.parametrize("shape", [chain, star], ids=["chain", "star"])
def test_validate_does_linear_work(tmp_path: Path, shape: Callable[[int], str]) -> None:
    lint = open_registries().lint_context()
    counts = []
    validate_project(project(tmp_path / "warm", shape(10)), lint, None)  # one-time imports
    for n in (N, 2 * N):
        root = project(tmp_path / str(n), shape(n))
        count, found = lines_run(validate_project, root, lint, None)
        assert found.errors == []
        counts.append(count)
    assert counts[1] / counts[0] < LINEAR, counts


@pytest.mark.parametrize("shape", [chain, star], ids=["chain", "star"])
def test_run_graph_layout_does_linear_work(shape: Callable[[int], str]) -> None:
    counts = []
    for n in (N, 2 * N):
        graph = graph_of(shape(n), "big")
        assert graph is not None
        count, svg = lines_run(render_svg, graph, RunState())
        assert svg.count('class="node ') == len(graph.steps)
        counts.append(count)
    assert counts[1] / counts[0] < LINEAR, counts
