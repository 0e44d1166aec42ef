"""Routing after a visit: edges, terminals, dependencies, joins, entry steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from manifest_helpers import ProjectDir, make_project

from swell.engine.loop.graph import Activation, Graph, Route, VisitOutcome
from swell.engine.steps.registry import default_step_kinds
from swell.manifest.loader import load_pipeline


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    return make_project(tmp_path, monkeypatch)


LOOP = """
kind: WavePipeline
steps:
  - id: implement
    script: echo
  - id: test
    dependencies: [implement]
    script: echo
  - id: check
    type: conditional
    dependencies: [test]
    edges:
      - target: _complete
        condition: context.tests_pass=true
      - target: _fail
        condition: context.tests_pass=broken
      - target: implement
        condition: context.tests_pass=false
      - target: test
        condition: context.tests_pass=false
      - target: report
  - id: report
    script: echo
    rework_only: true
"""


def graph(proj: ProjectDir, text: str) -> Graph:
    proj.pipeline(text)
    return Graph(load_pipeline(proj.root, "p").pipeline, default_step_kinds().of)


def done(step: str, outcome: str = "success", visit: int = 1, **kw: object) -> VisitOutcome:
    return VisitOutcome(step, visit, outcome, **kw)  # type: ignore[arg-type]


def test_first_matching_edge_wins(proj: ProjectDir) -> None:
    g = graph(proj, LOOP)
    routing = g.next_steps(done("check", visit=2), {"tests_pass": "false"}, {"check"})
    assert routing.activate == [Activation("implement", "edge", "check", 2)]
    assert routing.route == Route("implement", "context.tests_pass=false")
    assert not routing.complete and routing.fail is None


def test_unconditional_last_edge_is_the_fallback(proj: ProjectDir) -> None:
    g = graph(proj, LOOP)
    routing = g.next_steps(done("check"), {"tests_pass": "maybe"}, {"check"})
    assert routing.activate == [Activation("report", "edge", "check", 1)]
    assert routing.route == Route("report", None)


def test_edge_to_complete_ends_the_run(proj: ProjectDir) -> None:
    g = graph(proj, LOOP)
    routing = g.next_steps(done("check"), {"tests_pass": "true"}, {"check"})
    assert routing.complete and routing.fail is None and routing.activate == []
    assert routing.route == Route("_complete", "context.tests_pass=true")


def test_edge_to_fail_fails_the_run(proj: ProjectDir) -> None:
    g = graph(proj, LOOP)
    routing = g.next_steps(done("check"), {"tests_pass": "broken"}, {"check"})
    assert routing.fail == "routed to _fail (context.tests_pass=broken)"
    assert not routing.complete and routing.activate == []


ROUTER = """
kind: WavePipeline
steps:
  - id: deploy
    script: echo
    edges:
      - target: smoke
        condition: outcome=success
      - target: rollback
        condition: context.retry=no && outcome=fail
  - id: smoke
    script: echo
  - id: rollback
    script: echo
"""


def test_failure_that_no_edge_handles_fails_the_run(proj: ProjectDir) -> None:
    g = graph(proj, ROUTER)
    routing = g.next_steps(done("deploy", "failure", error="exit 3"), {}, {"deploy"})
    assert routing.fail == "step 'deploy' failed and no edge matched: exit 3"
    assert routing.activate == [] and routing.route is None


def test_failure_routed_by_an_outcome_edge(proj: ProjectDir) -> None:
    g = graph(proj, ROUTER)
    routing = g.next_steps(done("deploy", "failure"), {"retry": "no"}, {"deploy"})
    assert routing.activate == [Activation("rollback", "edge", "deploy", 1)]
    assert routing.fail is None


def test_success_that_no_edge_matches_ends_the_branch(proj: ProjectDir) -> None:
    g = graph(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            edges:
              - target: b
                condition: outcome=failure
          - id: b
            script: echo
        """,
    )
    routing = g.next_steps(done("a"), {}, {"a"})
    assert routing.activate == [] and not routing.complete and routing.fail is None


def test_failed_step_without_edges_is_routed_by_a_conditional_dependent(
    proj: ProjectDir,
) -> None:
    g = graph(proj, LOOP.replace("rework_only: true", "dependencies: [test]"))
    # `report` (a plain dependent) waits for success; only the router sees the failure
    routing = g.next_steps(done("test", "failure", visit=3), {}, {"implement", "test"})
    assert routing.activate == [Activation("check", "dependency", "test", 3)]
    assert routing.fail is None
    # the router then routes on the failure it inherited
    after = g.next_steps(done("check", "failure"), {"tests_pass": "false"}, {"check"})
    assert after.activate == [Activation("implement", "edge", "check", 1)]


def test_failed_step_without_edges_or_router_fails_the_run(proj: ProjectDir) -> None:
    g = graph(proj, LOOP)
    routing = g.next_steps(done("implement", "failure", error="boom"), {}, {"implement"})
    assert routing.fail == "step 'implement' failed: boom"
    routing = g.next_steps(done("implement", "failure"), {}, {"implement"})
    assert routing.fail == "step 'implement' failed: failure"


DAG = """
kind: WavePipeline
steps:
  - id: fetch
    script: echo
  - id: lint
    dependencies: [fetch]
    optional: true
    script: echo
  - id: unit
    dependencies: [fetch]
    script: echo
  - id: package
    dependencies: [lint, unit]
    script: echo
  - id: fixup
    dependencies: [unit]
    rework_only: true
    script: echo
"""


def test_success_activates_dependents_but_never_rework_only_ones(proj: ProjectDir) -> None:
    g = graph(proj, DAG)
    routing = g.next_steps(done("fetch"), {}, {"fetch"})
    assert [a.step_id for a in routing.activate] == ["lint", "unit"]
    assert all(a.reason == "dependency" and a.source_step == "fetch" for a in routing.activate)
    routing = g.next_steps(done("unit"), {}, {"fetch", "unit"})
    assert routing.activate == []  # package still waits for lint; fixup is rework_only


def test_join_activates_only_when_all_dependencies_finished(proj: ProjectDir) -> None:
    g = graph(proj, DAG)
    assert not g.deps_met("package", {"fetch", "lint"})
    assert g.deps_met("package", {"fetch", "lint", "unit"})
    routing = g.next_steps(done("lint"), {}, {"fetch", "lint", "unit"})
    assert routing.activate == [Activation("package", "dependency", "lint", 1)]


def test_optional_failure_continues(proj: ProjectDir) -> None:
    g = graph(proj, DAG)
    failed = done("lint", "failure", optional_failure=True, error="style")
    routing = g.next_steps(failed, {}, {"fetch", "unit", "lint"})
    assert routing.fail is None
    assert routing.activate == [Activation("package", "dependency", "lint", 1)]
    # the same failure on a step that is not optional fails the run
    routing = g.next_steps(done("unit", "failure", error="red"), {}, {"fetch", "unit"})
    assert routing.fail == "step 'unit' failed: red"


def test_gate_choice_with_a_target_routes_there(proj: ProjectDir) -> None:
    g = graph(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: prepare
            script: echo
          - id: approve
            dependencies: [prepare]
            gate:
              choices:
                - {label: Ship, key: ship, target: _complete}
                - {label: Rework, key: rework, target: prepare}
          - id: after
            dependencies: [approve]
            script: echo
        """,
    )
    rework = done("approve", choice_target="prepare", choice_key="rework")
    routing = g.next_steps(rework, {}, {"prepare", "approve"})
    assert routing.activate == [Activation("prepare", "choice", "approve", 1)]
    assert routing.route == Route("prepare", "choice=rework")
    ship = done("approve", choice_target="_complete", choice_key="ship")
    assert g.next_steps(ship, {}, {"prepare", "approve"}).complete
    # a decision without a target follows the dependencies
    plain = g.next_steps(done("approve"), {}, {"prepare", "approve"})
    assert [a.step_id for a in plain.activate] == ["after"]


@pytest.mark.parametrize(
    ("steps", "entries"),
    [
        # the first step, and dependency-free steps no edge leads to
        (LOOP, ["implement"]),
        (DAG, ["fetch"]),
        (ROUTER, ["deploy"]),
        (
            """
            kind: WavePipeline
            steps:
              - {id: a, script: x, edges: [{target: b}]}
              - {id: b, script: x}
              - {id: side, script: x}
              - {id: fixer, script: x, rework_only: true}
            """,
            ["a", "side"],
        ),
        # the first step starts even when an edge leads back to it; rework_only never does
        (
            """
            kind: WavePipeline
            steps:
              - {id: a, script: x, edges: [{target: a, condition: outcome=failure}]}
              - {id: redo, script: x, rework_only: true}
            """,
            ["a"],
        ),
    ],
)
def test_entry_steps(proj: ProjectDir, steps: str, entries: list[str]) -> None:
    import textwrap

    g = graph(proj, textwrap.dedent(steps))
    assert g.entries == entries
    assert g.entry_activations() == [Activation(e, "entry") for e in entries]
