"""A project with a trivial command pipeline, a JSONL queue to feed, and what its
store says about dispatched items."""

from __future__ import annotations

import json
from pathlib import Path

from swell.store.capabilities import dispatch
from swell.store.location import open_store

MANIFEST = """\
apiVersion: v1
kind: WaveManifest
metadata: {name: service-tests}
runtime: {workspace_root: .agents/workspaces}
"""
ECHO = """\
kind: WavePipeline
metadata: {name: echo}
input: {source: cli%s}
steps:
  - id: say
    type: command
    script: echo "got {{ input }}"
"""


def service_project(root: Path, input_fields: str = "", **pipelines: str) -> Path:
    """`root` with wave.yaml and the `echo` pipeline (plus `pipelines`: name -> text)."""
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / ".agents" / "pipelines" / "echo.yaml").write_text(ECHO % input_fields)
    for name, text in pipelines.items():
        (root / ".agents" / "pipelines" / f"{name}.yaml").write_text(text)
    return root


def enqueue(queue: Path, *ids: str, **fields: object) -> None:
    """Append items (whole lines, as a writer appending to the queue does)."""
    with queue.open("a") as out:
        for item in ids:
            out.write(json.dumps({"id": item, "input": f"item {item}", **fields}) + "\n")


def _where(state: Path | str) -> Path | str:
    """A state directory's SQLite store, or a store URL as it is (Postgres)."""
    return state / "state.db" if isinstance(state, Path) else state


def dispatched(state: Path | str, source: str) -> dict[str, list[str]]:
    """item -> the runs the store says were started for it."""
    store = open_store(_where(state))
    try:
        found: dict[str, list[str]] = {}
        for row in dispatch(store).dispatched(source):
            found.setdefault(row.item, []).append(row.run_id)
        return found
    finally:
        store.close()


def run_facts(state: Path | str) -> dict[str, tuple[str, str, int]]:
    """run id -> (status, input, how many times it started)."""
    store = open_store(_where(state))
    try:
        return {
            run.id: (
                run.status,
                run.input or "",
                len(store.events_of_kind(run.id, ["run.started"])),
            )
            for run in store.list_runs(limit=10_000)
        }
    finally:
        store.close()
