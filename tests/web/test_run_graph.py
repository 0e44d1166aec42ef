"""The run graph: every edge of the pipeline, laid out left to right without
overlaps, each node and edge readable by its data attributes."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import run_pipeline
from test_pages import get

from swell.manifest.loader import load_stored_pipeline
from swell.web.graph_layout import back_edges, layers, layout

TOUR = (Path(__file__).parent / "pipelines" / "tour.yaml").read_text()


def manifest_edges(text: str) -> set[tuple[str, str, str]]:
    """The pipeline's edges as its manifest states them (written out here, not taken
    from the dashboard's code)."""
    pipeline = load_stored_pipeline(Path("tour.yaml"), text).pipeline
    out: set[tuple[str, str, str]] = set()
    for s in pipeline.steps:
        out |= {(d, s.id, "dependency") for d in s.dependencies}
        out |= {(s.id, e.target, "condition" if e.condition else "edge") for e in s.edges}
        if s.gate:
            out |= {(s.id, c.target, "choice") for c in s.gate.choices if c.target}
        for c in s.handover.contracts if s.handover else []:
            if c.rework_step:
                out.add((s.id, c.rework_step, "rework"))
    return out


def svg_edges(svg: str) -> set[tuple[str, str, str]]:
    found = re.findall(r'data-from="([^"]+)" data-to="([^"]+)" data-kind="([^"]+)"', svg)
    return set(found)


def boxes(svg: str) -> dict[str, tuple[int, ...]]:
    return {
        step: tuple(int(v) for v in box.split(","))
        for step, box in re.findall(r'data-step="([^"]+)"[^>]*data-box="([^"]+)"', svg)
    }


def test_the_graph_draws_every_edge_of_the_pipeline_without_overlaps(project: Path) -> None:
    run_id = run_pipeline(project, "tour", TOUR, "--auto-approve")
    status, svg, _ = get(project, f"/api/runs/{run_id}/graph.svg")
    assert status == 200
    want = manifest_edges(TOUR)
    assert ("approve", "release", "choice") in want and ("build", "fix", "rework") in want
    assert svg_edges(svg) == want
    placed = boxes(svg)
    assert set(placed) == {"plan", "build", "fix", "test", "check", "approve", "release", "each"}
    items = list(placed.items())
    for i, (a, (ax, ay, aw, ah)) in enumerate(items):
        for b, (bx, by, bw, bh) in items[i + 1 :]:
            apart = ax + aw <= bx or bx + bw <= ax or ay + ah <= by or by + bh <= ay
            assert apart, (a, b)
    # left to right: each dependency and forward route points right
    for src, dst, kind in want:
        if kind in ("dependency", "rework") or (src, dst) == ("approve", "release"):
            assert placed[src][0] < placed[dst][0], (src, dst)
    # the gate's choice target follows the gate (it used to float as an entry point)
    assert placed["release"][0] > placed["approve"][0] > placed["plan"][0]


def test_the_graph_shows_the_run_kinds_states_path_and_child_runs(project: Path) -> None:
    run_id = run_pipeline(project, "tour", TOUR, "--auto-approve")
    _, svg, _ = get(project, f"/api/runs/{run_id}/graph.svg")
    kinds = dict(re.findall(r'data-step="([^"]+)" data-kind="([^"]+)"', svg))
    assert kinds["plan"] == "command" and kinds["approve"] == "gate" and kinds["check"] == "route"
    assert kinds["release"] == "sub" and kinds["each"] == "fan"
    visits = dict(re.findall(r'data-step="([^"]+)" data-kind="[^"]+" data-visits="(\d+)"', svg))
    assert visits["build"] == "3" and visits["fix"] == "1"
    taken = set(
        re.findall(r'class="edge k-(\w+) taken[^"]*" data-from="([^"]+)" data-to="([^"]+)"', svg)
    )
    assert {
        ("rework", "build", "fix"),
        ("edge", "check", "build"),
        ("choice", "approve", "release"),
    } <= taken
    assert ("choice", "approve", "build") not in taken  # "Redo" was not chosen
    _, _, body = get(project, "/api/runs?per_page=50")
    assert body is not None
    children = {r["id"]: r for r in body["runs"] if r["parent_run_id"] == run_id}  # type: ignore[union-attr]
    assert len(children) == 4  # the sub-pipeline and three iterations
    for child_id in children:
        assert f'data-child-run="{child_id}"' in svg or "+2 runs" in svg
    assert f'href="/runs/{run_id}/visits/build/3"' in svg  # each visited node opens its visit


def test_layout_of_a_loop_keeps_its_back_edge_out_of_the_layers() -> None:
    nodes = ["a", "b", "c", "d"]
    edges = [("a", "b"), ("b", "c"), ("c", "b"), ("c", "d"), ("a", "d")]
    back = back_edges(nodes, edges)
    assert back == {2}
    assert layers(nodes, edges, back) == {"a": 0, "b": 1, "c": 2, "d": 3}
    placed = layout(nodes, dict.fromkeys(nodes, (100, 40)), edges)
    assert placed.back == {2} and len(placed.routes) == len(edges)
    # the long edge a -> d passes beside b and c, not through them
    xs = [placed.pos[n][0] for n in nodes]
    assert xs == sorted(xs)


def test_groups_expand_inline_with_their_child_runs_steps_and_lanes(project: Path) -> None:
    """A sub-pipeline's and an iterate's child runs show inside their group: each run's
    steps in its pipeline's order, with their states, linked to their visits; the
    timeline gives each child run a lane under its group's, holding its visits."""
    run_id = run_pipeline(project, "tour", TOUR, "--auto-approve")
    _, _, body = get(project, "/api/runs?per_page=50")
    assert body is not None
    children = [r for r in body["runs"] if r["parent_run_id"] == run_id]  # type: ignore[union-attr]
    by_step = {
        step: sorted((r["created_at"], r["id"]) for r in children if r["parent_step_id"] == step)
        for step in ("release", "each")
    }
    assert len(by_step["release"]) == 1 and len(by_step["each"]) == 3
    _, html, _ = get(project, f"/runs/{run_id}")
    graph = html[html.index('<svg xmlns="http://www.w3.org/2000/svg" class="run-graph"') :]
    graph = graph[: graph.index("</svg>")]
    loop_steps = ["implement", "run-tests", "check"]  # examples/.agents/pipelines/loop.yaml
    for step, runs in by_step.items():
        node = graph[graph.index(f'data-step="{step}" data-kind=') :]
        node = node[: node.index('<g class="body">')]  # the group, before the step's own box
        for _, child in runs:
            row = re.search(
                rf'<g class="child-steps" data-child-run="{child}">(.*?)</g>', node, re.S
            )
            assert row is not None, (step, child)
            drawn = re.findall(
                r'<rect class="child-step ([^"]+)" data-child-step="([^"]+)"', row.group(1)
            )
            assert [s for _, s in drawn][:3] == loop_steps, drawn
            assert all(state == "s-succeeded" for state, _ in drawn[:3]), drawn
            assert f'href="/runs/{child}/visits/check/' in row.group(1)
    # the timeline: each child run a lane right under its group's, with its visits
    timeline = html[html.index('class="timeline-svg"') :]
    lanes = re.findall(
        r'<g class="lane( child)?" data-step="([^"]+)"(?: data-key="([^"]+)")?', timeline
    )
    names = [f"{step}/{key.rsplit(':', 1)[1]}" if child else step for child, step, key in lanes]
    release = names.index("release")
    assert names[release + 1] == f"release/{by_step['release'][0][1]}"
    each = names.index("each")
    # the iterations ran in parallel: their lanes follow in the order they started
    assert set(names[each + 1 : each + 4]) == {f"each/{r}" for _, r in by_step["each"]}
    for _, child in by_step["each"]:
        assert re.search(
            rf'data-step="implement" data-child-run="{child}" data-visit="1"', timeline
        )
