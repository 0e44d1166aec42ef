"""A run's `pipeline_outputs`: the files a pipeline exposes by name, resolved through the
store to the artifacts its run recorded; and finding them for `inject_artifacts[].pipeline`.

`run_outputs(reader, run_id)` is the one way to ask "what did that run produce under
its declared names": a parent reads its sub-pipeline's outputs with it, composition
steps collect their children's with it, `swell status` lists them with it. The reader
is any store (`store.protocols.RunReader`); the engine names only the few methods it
needs (`OutputsReader`), so it never imports the store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from swell.events.models import ArtifactWritten
from swell.manifest.models import ArtifactRef, Pipeline
from swell.manifest.wave_models import PipelineOutput
from swell.workspace import safe
from swell.workspace.mounts import json_path

# what `inject_artifacts` asks about an `inject_artifacts[].pipeline` entry (raising
# NotFound)
Lookup = Callable[[ArtifactRef], "Found"]

# how many of the newest runs a cross-pipeline lookup reads before it gives up
NEWEST_RUNS = 10_000
MAX_FIELD_FILE = 50 * 1024 * 1024  # an output file read for a `field:` value


class StoredRun(Protocol):
    """What a lookup reads of a stored run (`store.rows.RunRow`)."""

    @property
    def id(self) -> str: ...
    @property
    def pipeline(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def parent_run_id(self) -> str | None: ...
    @property
    def project_root(self) -> str | None: ...


class StoredArtifact(Protocol):
    """What a lookup reads of a stored artifact (`store.rows.ArtifactRow`)."""

    @property
    def step_id(self) -> str: ...
    @property
    def visit(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def type(self) -> str | None: ...


class OutputsReader(Protocol):
    """The store methods pipeline outputs are read through (every backend has them)."""

    def get_run(self, run_id: str) -> StoredRun: ...
    def list_runs(self, limit: int = ..., include_children: bool = ...) -> Sequence[StoredRun]: ...
    def artifacts(self, run_id: str) -> Sequence[StoredArtifact]: ...
    def pipeline_text(self, run_id: str) -> str | None: ...


@dataclass(frozen=True)
class RunOutput:
    """One declared output of a run: where it comes from and the file it resolved to."""

    name: str  # the `pipeline_outputs` key
    step: str
    artifact: str
    type: str | None  # the declared type (`string`, `issue_ref`, ...)
    field: str | None = None  # a JSON path into the file
    path: str | None = None  # None: the run recorded no such artifact (yet)
    sha256: str | None = None
    size: int | None = None
    visit: int | None = None  # the visit that wrote it (the step's newest)
    value: Any = None  # with `field`: the value there (None when unreadable)

    @property
    def found(self) -> bool:
        return self.path is not None

    def as_dict(self) -> dict[str, Any]:
        """For `-o json`."""
        return {
            "name": self.name,
            "step": self.step,
            "artifact": self.artifact,
            "type": self.type,
            "field": self.field,
            "path": self.path,
            "sha256": self.sha256,
            "size": self.size,
            "visit": self.visit,
            "value": self.value,
        }


def declared_outputs(reader: OutputsReader, run_id: str) -> dict[str, PipelineOutput]:
    """The `pipeline_outputs` of the pipeline file kept with the run (empty when the
    store kept no file or it no longer parses)."""
    text = reader.pipeline_text(run_id)
    if not text or "pipeline_outputs" not in text:  # most pipelines: no parse needed
        return {}
    import yaml  # only then: a run of pipelines without outputs never imports it

    try:
        return Pipeline.model_validate(yaml.safe_load(text)).pipeline_outputs
    except (yaml.YAMLError, ValueError):
        return {}


def run_outputs(reader: OutputsReader, run_id: str) -> dict[str, RunOutput]:
    """The run's declared `pipeline_outputs`, by name, each resolved to the newest file
    its step recorded under that artifact name (`path` None when there is none yet).

    Works on a finished run and on one still going (a parent's outputs so far). A
    `field` output also carries the value at that JSON path of the file."""
    newest = _newest_artifacts(reader.artifacts(run_id))
    outputs: dict[str, RunOutput] = {}
    for name, out in declared_outputs(reader, run_id).items():
        art = newest.get((out.step, out.artifact))
        if art is None:
            outputs[name] = RunOutput(name, out.step, out.artifact, out.type, out.field)
            continue
        outputs[name] = RunOutput(
            name,
            out.step,
            out.artifact,
            out.type,
            out.field,
            path=art.path,
            sha256=art.sha256,
            size=art.size,
            visit=art.visit,
            value=_field_value(art.path, out.field) if out.field else None,
        )
    return outputs


def _newest_artifacts(rows: Sequence[StoredArtifact]) -> dict[tuple[str, str], StoredArtifact]:
    """Each (step, name)'s artifact of the highest visit (rows come oldest first)."""
    newest: dict[tuple[str, str], StoredArtifact] = {}
    for row in rows:
        key = (row.step_id, row.name)
        if key not in newest or row.visit >= newest[key].visit:
            newest[key] = row
    return newest


def _field_value(path: str, field: str) -> Any:
    try:
        return json_path(json.loads(safe.read_limited(Path(path), MAX_FIELD_FILE)), field)
    except (OSError, ValueError, KeyError, safe.UnsafePath):
        return None


# ---------------------------------------------------------------- cross-pipeline


@dataclass(frozen=True)
class Found:
    """An artifact another run offers an `inject_artifacts[].pipeline` entry."""

    run_id: str
    path: str
    sha256: str
    type: str | None  # the producer's declared type of it


class NotFound(Exception):
    """No run offers the artifact; the message says why, for the step's error."""


def find_for(
    reader: OutputsReader,
    ref: ArtifactRef,
    *,
    run_id: str,
    parent_run_id: str | None,
    project_root: str,
) -> Found:
    """Where `ref` (`pipeline: NAME, artifact: A`) comes from, as Wave offers it: from
    the run's nearest ancestor of pipeline NAME (its outputs so far, then any artifact
    it recorded under that name), else from the newest succeeded run of NAME in this
    project. Raises NotFound naming what was looked for."""
    pipeline = ref.pipeline or ""
    ancestor = _ancestor(reader, parent_run_id, pipeline)
    if ancestor is not None:
        found = _offered(reader, ancestor, ref.artifact)
        if found is None:
            raise NotFound(
                f"parent run {ancestor} of pipeline '{pipeline}' has no output or artifact "
                f"'{ref.artifact}' yet"
            )
        return found
    source = _newest_succeeded(reader, pipeline, project_root, exclude=run_id)
    if source is None:
        raise NotFound(f"pipeline '{pipeline}' has no succeeded run in this project")
    found = _offered(reader, source, ref.artifact)
    if found is None:
        raise NotFound(
            f"the newest succeeded run of pipeline '{pipeline}' ({source}) has no output "
            f"'{ref.artifact}'"
        )
    return found


FILE_FORMATS = frozenset({"json", "text", "markdown", "binary"})


def type_note(ref: ArtifactRef, found: Found) -> str | None:
    """A warning when the producer declared another file format for the artifact than
    the step asks for. Never an error: Wave checks `type` only between steps of one
    pipeline, and a `pipeline_outputs` type (`findings_report`) names a schema, not a
    format, so it is no mismatch with `type: json`."""
    if ref.type in FILE_FORMATS and found.type in FILE_FORMATS and ref.type != found.type:
        return (
            f"input artifact '{ref.artifact}' of pipeline '{ref.pipeline}' is declared "
            f"'{found.type}' (run {found.run_id}); the step expects '{ref.type}'"
        )
    return None


def _ancestor(reader: OutputsReader, parent_run_id: str | None, pipeline: str) -> str | None:
    seen: set[str] = set()
    while parent_run_id and parent_run_id not in seen:
        seen.add(parent_run_id)
        parent = reader.get_run(parent_run_id)
        if parent.pipeline == pipeline:
            return parent.id
        parent_run_id = parent.parent_run_id
    return None


def _newest_succeeded(
    reader: OutputsReader, pipeline: str, project_root: str, exclude: str
) -> str | None:
    for run in reader.list_runs(NEWEST_RUNS, include_children=True):
        if run.pipeline != pipeline or run.status != "succeeded" or run.id == exclude:
            continue
        if run.project_root and run.project_root != project_root:
            continue  # a shared store (Postgres) holds other projects' runs too
        return run.id
    return None


def _offered(reader: OutputsReader, run_id: str, artifact: str) -> Found | None:
    """The run's output `artifact` (a `pipeline_outputs` name); else the newest artifact
    any of its steps recorded under that name (Wave's cross-pipeline map holds both)."""
    output = run_outputs(reader, run_id).get(artifact)
    if output is not None and output.found:
        assert output.path is not None and output.sha256 is not None
        return Found(run_id, output.path, output.sha256, output.type)
    rows = [a for a in reader.artifacts(run_id) if a.name == artifact and a.step_id]
    if not rows:
        return None
    row = rows[-1]
    return Found(run_id, row.path, row.sha256, row.type)


def lookup_in(
    reader: OutputsReader | None, *, run_id: str, parent_run_id: str | None, project_root: str
) -> Lookup:
    """The lookup `engine.visit.inject_artifacts` asks for `pipeline:` entries: the
    artifact found, or NotFound (a missing one, skipped when `optional`)."""

    def lookup(ref: ArtifactRef) -> Found:
        if reader is None:
            raise NotFound("this runtime keeps no runs to read pipeline outputs from")
        return find_for(
            reader, ref, run_id=run_id, parent_run_id=parent_run_id, project_root=project_root
        )

    return lookup


def as_artifacts(reader: OutputsReader | None, run_id: str) -> list[ArtifactWritten]:
    """A finished child run's outputs, each as an artifact of the calling step named by
    its `pipeline_outputs` key (so the parent injects them with `inject_artifacts:
    {step: CALLER, artifact: NAME}` and reads `{{ CALLER.out.NAME }}`); unstamped."""
    if reader is None:
        return []
    return [
        ArtifactWritten(
            name=out.name,
            path=out.path,
            sha256=out.sha256,
            size=out.size or 0,
            artifact_type=out.type,
        )
        for out in run_outputs(reader, run_id).values()
        if out.path is not None and out.sha256 is not None
    ]


__all__ = [
    "FILE_FORMATS",
    "Found",
    "Lookup",
    "NotFound",
    "OutputsReader",
    "RunOutput",
    "as_artifacts",
    "declared_outputs",
    "find_for",
    "lookup_in",
    "run_outputs",
    "type_note",
]
