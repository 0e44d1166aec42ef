"""Wave's graph-walker tests (internal/pipeline/graph_test.go), mirrored through
`swell run`: each Wave case is a pipeline of our own command steps whose outcomes a
counter file scripts (`fails N`: the first N visits fail), and each checks what the
run did: the order of visits, the visit counts and how the run ended. Case ids name
the Wave test; docs/conformance.md, "Wave's test tables"."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conftest import events, run_id_of, swell, write_pipeline

MANIFEST = "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: graph}\n"


def fails(step: str, times: int) -> str:
    """A script that fails its first `times` visits, then succeeds."""
    return (
        f"n=$(cat .visits-{step} 2>/dev/null || echo 0); n=$((n+1)); echo $n > .visits-{step}; "
        f'[ "$n" -gt {times} ]'
    )


def step(sid: str, extra: str = "", script: str = "true") -> str:
    return f"  - id: {sid}\n    type: command\n    script: '{script}'\n{extra}"


def router(sid: str, extra: str) -> str:
    return f"  - id: {sid}\n    type: conditional\n{extra}"


G = "pipeline/graph_test.go:"
# an exit that never holds: swell refuses a loop with no way out at all (a deliberate
# difference: Wave runs it into its visit limit), so Wave's loops get one
NEVER = "{target: _complete, condition: context.never=yes}"
# (id, steps, succeeds, visits in order, or a visit count per step)
CASES: list[tuple[str, str, bool, list[str] | dict[str, int]]] = [
    (
        G + "TestGraphWalker_LinearGraph",
        step("A") + step("B", "    dependencies: [A]\n") + step("C", "    dependencies: [B]\n"),
        True,
        ["A", "B", "C"],
    ),
    (
        G + "TestGraphWalker_EdgeChain",
        step("A", "    edges: [{target: B}]\n")
        + step("B", "    edges: [{target: C}]\n")
        + step("C"),
        True,
        ["A", "B", "C"],
    ),
    (
        G + "TestGraphWalker_SimpleLoop",
        step("implement")
        + step("test", "    dependencies: [implement]\n", fails("test", 2))
        + router(
            "gate",
            "    dependencies: [test]\n"
            "    edges: [{target: done, condition: outcome=success}, {target: fix}]\n",
        )
        + step("fix", "    dependencies: [gate]\n    max_visits: 5\n    edges: [{target: test}]\n")
        + step("done", "    dependencies: [gate]\n"),
        True,
        {"implement": 1, "test": 3, "gate": 3, "fix": 2, "done": 1},
    ),
    (
        G + "TestGraphWalker_ImplementTestFixCycle",
        step("implement")
        + step("test", "    dependencies: [implement]\n", fails("test", 2))
        + router(
            "gate",
            "    dependencies: [test]\n"
            "    edges: [{target: finalize, condition: outcome=success}, {target: fix}]\n",
        )
        + step("fix", "    dependencies: [gate]\n    max_visits: 5\n    edges: [{target: test}]\n")
        + step("finalize", "    dependencies: [gate]\n"),
        True,
        ["implement", "test", "gate", "fix", "test", "gate", "fix", "test", "gate", "finalize"],
    ),
    (
        G + "TestGraphWalker_MaxVisitsEnforcement",
        step("start", "    edges: [{target: looper}]\n")
        + step("looper", "    max_visits: 2\n    edges: [" + NEVER + ", {target: looper}]\n"),
        False,
        {"start": 1, "looper": 2},
    ),
    (
        G + "TestGraphWalker_CircuitBreaker",
        step("start", "    edges: [{target: flaky}]\n")
        + step(
            "flaky",
            "    max_visits: 10\n"
            "    edges: [{target: done, condition: outcome=success}, {target: flaky}]\n",
            "echo the same error >&2; exit 1",
        )
        + step("done"),
        False,
        {"start": 1, "flaky": 3},
    ),
    (
        G + "TestGraphWalker_ConditionalInheritsOutcome/success_path",
        step("worker")
        + router(
            "router",
            "    dependencies: [worker]\n    edges: [{target: happy, condition: outcome=success},"
            " {target: sad, condition: outcome=failure}]\n",
        )
        + step("happy", "    dependencies: [router]\n")
        + step("sad", "    dependencies: [router]\n"),
        True,
        {"worker": 1, "router": 1, "happy": 1},
    ),
    (
        G + "TestGraphWalker_ConditionalInheritsOutcome/failure_path",
        step("worker", "    edges: [{target: router}]\n", "exit 1")
        + router(
            "router",
            "    edges: [{target: happy, condition: outcome=success},"
            " {target: sad, condition: outcome=failure}]\n",
        )
        + step("happy")
        + step("sad"),
        True,
        {"worker": 1, "router": 1, "sad": 1},
    ),
    (
        G + "TestGraphWalker_EdgeTargetWithUnmetDeps",
        step("A", "    edges: [{target: C}]\n")
        + step("B", "    dependencies: [A]\n")
        + step("C", "    dependencies: [A, B]\n"),
        True,
        ["A", "B", "C"],
    ),
    (
        G + "TestGraphWalker_DependencyGatedStepNotSkipped",
        step(
            "test-gate",
            "    edges: [{target: generate-report, condition: outcome=success},"
            " {target: diagnose-failure}]\n",
            "exit 1",
        )
        + step("diagnose-failure")
        + step("approval-gate", "    dependencies: [test-gate, diagnose-failure]\n")
        + step("generate-report", "    dependencies: [approval-gate]\n"),
        True,
        ["test-gate", "diagnose-failure", "approval-gate", "generate-report"],
    ),
]


@pytest.mark.parametrize(
    ("steps", "succeeds", "visits"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_walk(
    tmp_path: Path, steps: str, succeeds: bool, visits: list[str] | dict[str, int]
) -> None:
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    write_pipeline(tmp_path, "g", "kind: WavePipeline\nmetadata: {name: g}\nsteps:\n" + steps)
    result = swell("run", "g", cwd=tmp_path)
    assert (result.returncode == 0) is succeeds, result.stdout + result.stderr
    started = [e["step_id"] for e in events(tmp_path, run_id_of(result.stdout))
               if e["type"] == "step.started"]  # fmt: skip
    if isinstance(visits, list):
        assert started == visits
    else:
        assert dict(Counter(started)) == visits


def test_max_step_visits(tmp_path: Path) -> None:
    """G:TestGraphWalker_MaxStepVisitsEnforcement: A and B loop; the pipeline's
    `max_step_visits: 5` ends the run after five visits in all."""
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    steps = step("A", "    edges: [{target: B}]\n") + step(
        "B", "    edges: [" + NEVER + ", {target: A}]\n"
    )
    write_pipeline(
        tmp_path,
        "g",
        "kind: WavePipeline\nmetadata: {name: g}\nmax_step_visits: 5\nsteps:\n" + steps,
    )
    result = swell("run", "g", cwd=tmp_path)
    assert result.returncode == 1
    started = [e for e in events(tmp_path, run_id_of(result.stdout)) if e["type"] == "step.started"]
    assert len(started) == 5
    assert "max_step_visits" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("steps", "says"),
    [
        (
            step("start", "    edges: [{target: looper}]\n")
            + step("looper", "    max_visits: 2\n    edges: [{target: looper}]\n"),
            "loop looper -> looper can never be left",
        ),
    ],
    ids=[
        G + "TestGraphWalker_MaxVisitsEnforcement(no_way_out:deliberate)",
    ],
)
def test_refused_before_the_run(tmp_path: Path, steps: str, says: str) -> None:
    """Wave walks this loop into its visit limit; swell refuses it at validate
    (docs/conformance.md, deliberate)."""
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    write_pipeline(tmp_path, "g", "kind: WavePipeline\nmetadata: {name: g}\nsteps:\n" + steps)
    result = swell("validate", "g", cwd=tmp_path)
    assert result.returncode == 1 and says in result.stdout + result.stderr
