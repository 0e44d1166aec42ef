"""The dashboard's pieces on their own: artifact paths, the graph, the generic pager,
and what the web package may import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from swell.events import models as ev
from swell.store.capabilities import page_reader
from swell.store.memory import MemoryStore
from swell.store.pages import RunFilter
from swell.web import data
from swell.web.artifacts import read_artifact
from swell.web.graph import Edge, Graph, Node, RunState, render_svg
from swell.web.graph_layout import layout
from swell.workspace.safe import UnsafePath

WEB = Path(data.__file__).parent


def test_artifact_paths_outside_the_workspace_are_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "out").mkdir(parents=True)
    (ws / "out" / "a.txt").write_text("fine")
    (tmp_path / "secret").write_text("no")
    assert read_artifact(str(ws), "out/a.txt") == b"fine"
    assert read_artifact(str(ws), str(ws / "out" / "a.txt")) == b"fine"
    for bad in ("../secret", str(tmp_path / "secret"), "out/../../secret"):
        with pytest.raises(UnsafePath):
            read_artifact(str(ws), bad)
    (ws / "link").symlink_to(tmp_path)
    with pytest.raises(UnsafePath, match="symbolic link"):
        read_artifact(str(ws), "link/secret")
    with pytest.raises(UnsafePath):
        read_artifact(None, "out/a.txt")


def test_graph_marks_the_running_step_and_escapes_names() -> None:
    nodes = [Node("a", "command", "command"), Node("<b>", "agent", "prompt")]
    graph = Graph(nodes, [Edge("a", "<b>", "dependency"), Edge("<b>", "a", "edge")])
    graph.placed = layout(
        ["a", "<b>"], {"a": (176, 54), "<b>": (176, 54)}, [("a", "<b>"), ("<b>", "a")]
    )
    svg = render_svg(graph, RunState(visits={"a": 3, "<b>": 2}, status={"<b>": "running"}))
    assert 'class="node k-agent s-running" data-step="&lt;b&gt;"' in svg
    assert "3 visits" in svg and "<b>" not in svg and "<title>&lt;b&gt;: prompt" in svg
    assert "2 visits · running" in svg


def test_pages_over_the_memory_store() -> None:
    store = MemoryStore()
    for n in range(3):
        run_id = f"r{n}"
        store.create_run(run_id=run_id, pipeline="p" if n else "q", input_text="", workspace="")
        batch: list[ev.BaseEvent] = [
            ev.RunStarted(pipeline="p"),
            ev.StepStarted(step_id="s", visit=1, kind="command"),
            ev.StepFinished(step_id="s", visit=1, outcome="success", tokens_in=5, cost_usd=0.5),
        ]
        for seq, event in enumerate(batch, 1):
            event.run_id, event.seq, event.ts = run_id, seq, f"2026-11-24T00:00:0{n}.000Z"
        store.emit(batch)
    reader = data.Reader(store, page_reader(store))
    page = data.runs_page(reader, RunFilter(pipeline="p"), 1, 1)
    assert page.total == 2 and page.pages == 2 and page.runs[0].tokens_in == 5
    detail = data.run_detail(reader, "r1", 1, 50)
    assert detail.running == [] and detail.visits_total == 1 and detail.run.cost_usd == 0.5
    found = data.visit_detail(reader, "r1", "s", 1)
    assert found is not None and [e["type"] for e in found.events] == [
        "step.started",
        "step.finished",
    ]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_web_reads_the_store_and_never_imports_the_engine_or_cli() -> None:
    for path in WEB.glob("*.py"):
        for name in _imports(path):
            assert not name.startswith(("swell.engine", "swell.cli")), f"{path.name}: {name}"
