"""`aggregate: {from, into, strategy, key}`: merge what earlier steps produced (usually an
iterate's `collected-output`) into one file, recorded as an artifact later steps inject
(docs/composition.md)."""

from __future__ import annotations

import json
from typing import Any

from swell.engine.steps.base import StepKind
from swell.engine.steps.compose.step_out_refs import loaded_namespace
from swell.engine.visit.context import StepResult, VisitContext
from swell.errors import Problem
from swell.events.models import ArtifactWritten
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.templates.render import render_text
from swell.workspace import safe


class AggregateError(ValueError):
    """The source cannot be merged as the strategy asks."""


def artifact_name(into: str) -> str:
    """The artifact's name: `into`'s file name without its extension (as Wave names it)."""
    base = into.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


def merge_arrays(text: str, key: str | None) -> Any:
    """A JSON array flattened one level; with `key`, the arrays under `key` of each
    element, concatenated."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise AggregateError(f"`from` is not JSON ({exc})") from None
    if not isinstance(value, list):
        raise AggregateError(f"`from` must be a JSON array, not {type(value).__name__}")
    if key:
        merged: list[Any] = []
        for index, element in enumerate(value):
            if element is None:
                raise AggregateError(f"element {index} is null (a failed item?)")
            inner = element.get(key) if isinstance(element, dict) else None
            if not isinstance(inner, list):
                raise AggregateError(f"element {index} has no array under '{key}'")
            merged += inner
        return merged
    if any(isinstance(e, list) for e in value):
        return [x for e in value for x in (e if isinstance(e, list) else [e])]
    return value


class Aggregate(StepKind):
    name = "aggregate"
    records_round = False

    def detail(self, step: Step) -> str | None:
        return f"{step.aggregate.strategy} into {step.aggregate.into}" if step.aggregate else None

    def problems(self, scope: LintScope) -> list[Problem]:
        config = scope.step.aggregate
        if config is None:
            return []
        if config.into.startswith(("/", "..")) or "/../" in config.into:
            return [scope.problem(("aggregate", "into"), "`into` must stay inside the workspace")]
        if config.key and config.strategy != "merge_arrays":
            return [scope.problem(("aggregate", "key"), "`key` applies to merge_arrays only")]
        return []

    async def run(self, ctx: VisitContext) -> StepResult:
        config = ctx.step.aggregate
        assert config is not None
        rendered = render_text(config.from_, await loaded_namespace(ctx, config.from_))
        if rendered.missing:
            names = ", ".join(rendered.missing)
            return StepResult(outcome="failure", error=f"aggregate.from: no value for {names}")
        if config.strategy == "merge_arrays":
            try:
                merged = merge_arrays(rendered.text, config.key)
            except AggregateError as exc:
                return StepResult(outcome="failure", error=f"aggregate (merge_arrays): {exc}")
            raw = (json.dumps(merged, indent=2) + "\n").encode()
        else:  # concat, reduce: the rendered text as it is
            raw = rendered.text.encode()
        try:
            path = safe.place(ctx.workspace.path, config.into)
            safe.replace(path, raw)
            sha, size = safe.digest_file(path)
        except (OSError, safe.UnsafePath) as exc:
            return StepResult(outcome="failure", error=f"aggregate.into: {exc}")
        kind = "json" if config.strategy == "merge_arrays" else None
        written = ArtifactWritten(
            name=artifact_name(config.into),
            path=str(path),
            sha256=sha,
            size=size,
            artifact_type=kind,
        )
        return StepResult(
            outcome="success",
            events=[ctx.event(written)],
            outputs={"stdout": "", "path": str(path)},
        )


KIND = Aggregate()
