"""Wave's step-output templates in composition fields: `{{ STEP.out.NAME[.path] }}` is
the content of STEP's artifact NAME (a JSON path reads into it), `{{ STEP.output }}`
that of STEP's first declared artifact, and `{{ STEP.output.path }}` the path in the first
of its artifacts that has it (docs/composition.md). Files are read only
when a template asks for them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from swell.engine.visit.context import VisitContext
from swell.manifest.models import Step
from swell.templates.expressions import MissingVariable, lookup, to_text
from swell.templates.render import render_text
from swell.workspace import safe
from swell.workspace.offload import off_loop

MAX_READ = 50 * 1024 * 1024  # an artifact larger than this is not read into a template


def read_value(path: str | Path) -> Any:
    """An artifact file's content: its JSON value when it holds JSON, else its text;
    None when it cannot be read."""
    try:
        raw = safe.read_capped(Path(path), MAX_READ).decode("utf-8", "replace")
    except (OSError, safe.UnsafePath):
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

    def load(self) -> None:
        """Read the file (once): at most `MAX_READ` bytes, a regular file only."""
        if not self._loaded:
            self._loaded = True
            try:
                self._text = safe.read_capped(Path(self.path), MAX_READ).decode("utf-8", "replace")
            except (OSError, safe.UnsafePath):
                self._text = ""
            try:
                self._value = json.loads(self._text)
            except ValueError:
                self._value = None

    def _fields(self) -> Mapping[Any, Any]:
        self.load()
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
        self.load()
        return self._text.strip()


class FirstWith(Mapping[Any, Any]):
    """`{{ STEP.output[.path] }}`: the whole reads as the first candidate; a path reads
    from the first candidate that has it, as Wave tries each of a step's artifacts."""

    def __init__(self, candidates: list[Any]) -> None:
        self.candidates = candidates

    def __getitem__(self, key: Any) -> Any:
        found = []
        for candidate in self.candidates:
            try:
                found.append(lookup(candidate, (key,)))
            except MissingVariable:
                continue
        if not found:
            raise KeyError(key)
        first = found[0]
        return (
            first if len(found) == 1 or not isinstance(first, Mapping | list) else FirstWith(found)
        )

    def __iter__(self) -> Iterator[Any]:
        first = self.candidates[0]
        return iter(first) if isinstance(first, Mapping) else iter(())

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __str__(self) -> str:
        return to_text(self.candidates[0])


def outputs_of(step: Step | None, recorded: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {name: Content(path) for name, path in recorded.items()}
    entry: dict[str, Any] = {"out": out}
    # declared outputs first, in their order; then what else was recorded (an
    # iterate's `collected-output`, a child's artifacts), in the order it was recorded
    declared = [a.name for a in step.output_artifacts] if step is not None else []
    names = [n for n in declared if n in recorded] + [n for n in recorded if n not in declared]
    if names:
        entry["output"] = FirstWith([out[n] for n in names])
    return entry


def composition_namespace(ctx: VisitContext) -> dict[str, Any]:
    """The visit's template variables plus every step's outputs under its id."""
    steps = {s.id: s for s in ctx.plan.pipeline.pipeline.steps}
    ns = dict(ctx.namespace)
    for step_id, recorded in ctx.state.artifacts.items():
        ns.setdefault(step_id, outputs_of(steps.get(step_id), recorded))
    return ns


async def loaded_namespace(ctx: VisitContext, *texts: str) -> dict[str, Any]:
    """`composition_namespace`, with the artifacts of every step that `texts` name
    (`{{ STEP.out... }}`, `{{ STEP.output... }}`) read beforehand in a thread of their
    own: a slow or huge file (up to `MAX_READ` each) does not hold up the event loop,
    so `--timeout` and `swell cancel` still act while it is read."""
    ns = composition_namespace(ctx)
    wanted = [
        content
        for step_id in ctx.state.artifacts
        if any(f"{step_id}.out" in text for text in texts)
        for content in ns[step_id]["out"].values()
        if isinstance(content, Content)
    ]

    def load_all() -> None:
        for content in wanted:
            content.load()

    if wanted:
        await off_loop(load_all)
    return ns


def render_field(text: str, ns: Mapping[str, Any]) -> str:
    """A composition field rendered (step outputs, then the visit's variables)."""
    return render_text(text, ns).text


__all__ = [
    "Content",
    "FirstWith",
    "composition_namespace",
    "loaded_namespace",
    "outputs_of",
    "read_value",
    "render_field",
]
