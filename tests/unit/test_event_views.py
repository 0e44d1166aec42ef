"""Views of stored events (`events.views`): what `swell logs` prints without pydantic
must be what the models would print, for every kind of event, and `swell logs` must
really not import pydantic."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from event_samples import bare, full, kinds, samples, stored_row
from swell.cli.render import ProgressPrinter
from swell.events import models as ev
from swell.events.views import EventView, view
from swell.store.location import open_project_store

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "event_shapes.py"


def _viewed(event: ev.BaseEvent) -> EventView:
    row = stored_row(event)
    shown = view(row.type, row.data, **row.envelope(event.run_id))
    assert shown is not None
    return shown


def _plain(value: Any) -> Any:
    """A view (or a list of them) as the dict `model_dump` would give."""
    if isinstance(value, EventView):
        return {k: _plain(v) for k, v in vars(value).items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_the_shapes_module_matches_the_models() -> None:
    spec = importlib.util.spec_from_file_location("event_shapes", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.current(), "run python scripts/event_shapes.py"


@pytest.mark.parametrize("kind", kinds(), ids=lambda k: k.model_fields["type"].default)
@pytest.mark.parametrize("make", [bare, full])
def test_a_view_has_the_fields_of_the_stored_event(kind: type, make: Any) -> None:
    event = make(kind)
    assert _plain(_viewed(event)) == event.model_dump()


def test_a_default_list_is_not_shared_between_views() -> None:
    first, second = _viewed(bare(ev.GateWaiting)), _viewed(bare(ev.GateWaiting))
    first.choices.append("x")  # type: ignore[attr-defined]
    assert second.choices == []  # type: ignore[attr-defined]


def test_a_kind_this_version_does_not_know_has_no_view() -> None:
    row = dict(run_id="r", seq=1, ts="2026-01-01T00:00:00Z", step_id=None, visit=None)
    assert view("step.teleported", "{}", **row) is None


def test_the_printer_shows_a_view_as_it_shows_the_event() -> None:
    for color in (False, True):
        by_model = ProgressPrinter(color=color, root_run="r-other")
        by_view = ProgressPrinter(color=color, root_run="r-other")
        shown = 0
        for event in samples():
            line = by_model.line(event)
            assert by_view.line(_viewed(event)) == line, event
            shown += line is not None
        assert shown > 20  # most kinds show a line


def _run(tmp_path: Path) -> str:
    """A stored run of every kind of event, in the project at tmp_path; its id."""
    (tmp_path / "wave.yaml").write_text("apiVersion: v1\nkind: WaveManifest\nmetadata: {name: p}\n")
    store = open_project_store(tmp_path)
    store.create_run(run_id="r1", pipeline="p", input_text="go", workspace=str(tmp_path))
    batch = list(samples())
    for seq, event in enumerate(batch, start=1):
        event.run_id, event.seq = "r1", seq
    store.emit(batch)
    store.close()
    return "r1"


def _logs(tmp_path: Path, *args: str) -> tuple[str, bool]:
    """`swell logs ARGS` in a fresh interpreter: what it printed, and whether it
    imported pydantic."""
    code = (
        f"import sys; sys.argv = ['swell', 'logs', *{list(args)!r}]\n"
        "from swell.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('pydantic' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr.strip().splitlines()[-1] == "True"


def test_swell_logs_prints_without_importing_pydantic(tmp_path: Path) -> None:
    run_id = _run(tmp_path)
    printed, imported = _logs(tmp_path, run_id)
    assert not imported
    printer = ProgressPrinter(color=False, root_run=run_id)
    store = open_project_store(tmp_path)
    expected = [f"{e.ts[11:19]} {line}" for e in store.events(run_id) if (line := printer.line(e))]
    assert printed == "".join(line + "\n" for line in expected)
    # one step's events with their output: the reader that also follows a run
    printed, imported = _logs(tmp_path, run_id, "--step", "implement")
    assert not imported
    assert "▶ implement" in printed
    # NDJSON is every field of the model: that is read through the models
    printed, imported = _logs(tmp_path, run_id, "-o", "json")
    assert imported
    assert [json.loads(line) for line in printed.splitlines()] == [
        json.loads(ev.event_json(e)) for e in store.events(run_id)
    ]
