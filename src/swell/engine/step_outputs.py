"""Wave's step-output templates in composition fields: `{{ STEP.out.NAME[.path] }}` is
the content of STEP's artifact NAME (a JSON path reads into it), `{{ STEP.output }}`
that of STEP's first declared artifact (docs/composition.md). Files are read only
when a template asks for them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from swell.engine.context import VisitContext
from swell.manifest.models import Step
from swell.manifest.templates import render_text

MAX_READ = 50 * 1024 * 1024  # an artifact larger than this is not read into a template


def read_value(path: str | Path) -> Any:
    """An artifact file's content: its JSON value when it holds JSON, else its text;
    None when it cannot be read."""
    try:
        raw = Path(path).read_bytes()[:MAX_READ].decode("utf-8", "replace")
    except OSError:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class Content(Mapping[Any, Any]):
    """One artifact's content in a template: its raw text where the whole is inserted,
    its JSON fields where a path reads into it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._loaded = False
        self._text = ""
        self._value: Any = None

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            try:
                self._text = Path(self.path).read_bytes()[:MAX_READ].decode("utf-8", "replace")
            except OSError:
                self._text = ""
            try:
                self._value = json.loads(self._text)
            except ValueError:
                self._value = None

    def _fields(self) -> Mapping[Any, Any]:
        self._load()
        if isinstance(self._value, dict):
            return self._value
        if isinstance(self._value, list):  # `[N]` and `.N` read an array's elements
            return {str(i): v for i, v in enumerate(self._value)}
        return {}

    def __getitem__(self, key: Any) -> Any:
        return self._fields()[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._fields())

    def __len__(self) -> int:
        return len(self._fields())

    def __str__(self) -> str:
        self._load()
        return self._text.strip()


def outputs_of(step: Step | None, recorded: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {name: Content(path) for name, path in recorded.items()}
    entry: dict[str, Any] = {"out": out}
    declared = [a.name for a in step.output_artifacts] if step is not None else []
    first = next((n for n in declared if n in recorded), None)
    if first is None and recorded:
        # no declared output recorded (an iterate's `collected-output`, a child's
        # artifacts): the first recorded, in the order it was recorded
        first = next(iter(recorded))
    if first is not None:
        entry["output"] = out[first]
    return entry


def composition_namespace(ctx: VisitContext) -> dict[str, Any]:
    """The visit's template variables plus every step's outputs under its id."""
    steps = {s.id: s for s in ctx.plan.pipeline.pipeline.steps}
    ns = dict(ctx.namespace)
    for step_id, recorded in ctx.state.artifacts.items():
        ns.setdefault(step_id, outputs_of(steps.get(step_id), recorded))
    return ns


def render_field(text: str, ns: Mapping[str, Any]) -> str:
    """A composition field rendered (step outputs, then the visit's variables)."""
    return render_text(text, ns).text


__all__ = ["Content", "composition_namespace", "outputs_of", "read_value", "render_field"]
