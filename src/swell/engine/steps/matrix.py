"""A matrix `strategy`: the step runs once per item of a JSON array (`items_source`),
each item in a workspace of its own with `{{ task }}` set to the item, at most
`max_concurrency` at once; or, with `child_pipeline`, each item as a child run. Items
may depend on each other (`item_id_key`, `dependency_key`): they run in tiers, and an
item whose dependency failed is skipped (docs/composition.md)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from swell.engine.steps.base import StepKind
from swell.engine.steps.compose import fanout
from swell.engine.steps.compose.children import (
    ChildCall,
    after_child,
    child_options,
    child_pipeline,
    declared_output,
    failure_text,
    run_item,
)
from swell.engine.steps.concurrency import fan_out_problems
from swell.engine.visit.context import StepResult, VisitContext
from swell.errors import Problem, SwellError
from swell.manifest.lint_context import LintScope
from swell.manifest.loader import load_pipeline
from swell.manifest.models import Step
from swell.manifest.wave_models import MatrixStrategy
from swell.templates.expressions import to_text
from swell.templates.render import render_text
from swell.workspace import safe
from swell.workspace.offload import off_loop

MAX_ITEMS_FILE = 50 * 1024 * 1024
_GO_FIELD = re.compile(r"\{\{-?\s*\.([A-Za-z0-9_.]*)\s*-?\}\}")  # `{{ .name }}`, `{{ . }}`


class Items(Exception):
    """The items cannot be read or ordered; the message says why."""


class Matrix(StepKind):
    name = "matrix"
    retries = "own"
    records_round = False

    def detail(self, step: Step) -> str | None:
        s = step.strategy
        if s is None:
            return None
        what = f"pipeline {s.child_pipeline}" if s.child_pipeline else "the prompt"
        return f"{what} for each item of {s.items_source}"

    def problems(self, scope: LintScope) -> list[Problem]:
        s = scope.step.strategy
        if s is None:
            return [scope.problem(("type",), "a matrix step needs a `strategy`")]
        if s.type != "matrix":
            return [
                scope.problem(
                    ("strategy", "type"), f"strategy type '{s.type}' is not known (matrix)"
                )
            ]
        problems = [] if s.child_pipeline else fan_out_problems(scope, "strategy")
        if not s.items_source:
            problems.append(scope.problem(("strategy",), "a matrix strategy needs `items_source`"))
        if s.dependency_key and not s.item_id_key:
            problems.append(
                scope.problem(
                    ("strategy", "dependency_key"), "`dependency_key` needs `item_id_key`"
                )
            )
        if s.input_template and not s.child_pipeline:
            problems.append(
                scope.problem(
                    ("strategy", "input_template"), "`input_template` needs `child_pipeline`"
                )
            )
        if s.child_pipeline:
            try:
                load_pipeline(scope.project.root, _pipeline_name(s.child_pipeline))
            except (SwellError, OSError) as exc:
                problems.append(scope.problem(("strategy", "child_pipeline"), str(exc)))
        return problems

    async def run(self, ctx: VisitContext) -> StepResult:
        s = ctx.step.strategy
        assert s is not None and s.items_source
        try:
            values = read_items(ctx, s)
            workers = [fanout.Worker(i, f"worker-{i}", item=v) for i, v in enumerate(values)]
            tiers = _tiers(workers, s) if s.dependency_key else [workers]
        except Items as exc:
            return StepResult(outcome="failure", error=f"matrix: {exc}")
        job = _child_job(ctx, s) if s.child_pipeline else _agent_job(ctx)
        width = s.max_concurrency or len(workers)
        failed: set[str] = set()
        for tier in tiers:
            runnable = [w for w in tier if not _skip(w, s, failed)]
            await fanout.schedule(runnable, width, job, fail_fast=not s.dependency_key)
            failed |= {w.item_id or "" for w in tier if not w.ok}
        if any(w.waiting for w in workers):
            return StepResult(outcome="failure", waiting=True)  # an item stopped at a gate
        check = not s.child_pipeline
        return await fanout.step_result(ctx, workers, "worker", "matrix", check_conflicts=check)


def _agent_job(ctx: VisitContext) -> Any:
    async def job(worker: fanout.Worker) -> None:
        await fanout.run_agent(ctx, worker, {"task": worker.item})

    return job


def _child_job(ctx: VisitContext, s: MatrixStrategy) -> Any:
    """Each item as a child run of `child_pipeline` (the iterate machinery), its input
    `input_template` rendered with the item; its own output is the item's slot."""
    options, problems = child_options(ctx)
    name = _pipeline_name(s.child_pipeline or "")
    resumed = ctx.resumed.children if ctx.resumed else {}

    async def job(worker: fanout.Worker) -> None:
        if problems:
            worker.error = "; ".join(problems)
            return
        text = input_text(s.input_template, worker.item, ctx.namespace)
        call = ChildCall(name, text, worker.index, resumed.get(worker.index), own_workspace=True)
        outcome = await run_item(ctx, call, options)
        worker.ran, worker.child_run = True, outcome.run_id
        worker.waiting = outcome.status == "waiting"
        if outcome.status != "succeeded":
            worker.error = failure_text(outcome)
            return
        kept, left = after_child(ctx, outcome, name, keep=False)
        worker.events += kept
        worker.error = "; ".join(left) or None
        declared = child_pipeline(ctx, name)  # a step-written file: read off the event loop
        worker.value = await off_loop(lambda: declared_output(declared, outcome.artifacts))

    return job


def _pipeline_name(name: str) -> str:
    """Wave's `child_pipeline`: a name, or a `.yaml` path (its file name is the name)."""
    return Path(name).stem if name.endswith((".yaml", ".yml")) else name


def input_text(template: str | None, item: Any, ns: dict[str, Any]) -> str:
    """Wave's `input_template` (a Go template over the item: `{{ .field }}`, `{{ . }}`),
    with swell's variables and `{{ task }}` too; without one, the item as JSON."""
    if not template:
        return json.dumps(item)

    def field(match: re.Match[str]) -> str:
        value = item
        for part in filter(None, match.group(1).split(".")):
            value = value.get(part) if isinstance(value, dict) else None
        return "" if value is None else to_text(value)

    return render_text(_GO_FIELD.sub(field, template), {**ns, "task": item}).text


# ------------------------------------------------------------------ items


def source_path(ctx: VisitContext, source: str) -> list[Path]:
    """Where `items_source` may be, in order. `STEP/REST` (Wave's form) names step
    STEP's artifact REST, or its recorded file called REST, or REST in the workspace;
    any other relative path is looked up in the workspace, then the project (Wave reads
    it from its working directory, the project)."""
    root, workspace = ctx.plan.project.root, ctx.workspace.path
    if Path(source).is_absolute():
        return [Path(source)]
    step_id, _, rest = source.partition("/")
    found: list[Path] = []
    recorded = ctx.state.artifacts.get(step_id, {}) if rest else {}
    if rest in recorded:
        found.append(Path(recorded[rest]))
    found += [Path(p) for p in recorded.values() if p.endswith("/" + rest)]
    if recorded:
        found.append(workspace / rest)
    return [*found, workspace / source, root / source]


def read_items(ctx: VisitContext, s: MatrixStrategy) -> list[Any]:
    """The items: the JSON array at `items_source`; `item_key` is the dotted path to it
    inside an object (Wave's reading), or, when the file holds an array of objects,
    the field of each item to use (as Wave's guide describes it)."""
    source = s.items_source or ""
    places = source_path(ctx, source)
    path = next((p for p in places if os.path.lexists(p) and not p.is_dir()), None)
    if path is None:
        where = ", ".join(dict.fromkeys(str(p) for p in places))
        raise Items(f"items_source '{source}' not found (looked at {where})")
    try:  # a regular file, never through a link (a FIFO would never end)
        raw = safe.read_limited(path.resolve(), MAX_ITEMS_FILE)
    except (OSError, safe.UnsafePath) as exc:
        raise Items(f"items_source: {exc}") from None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise Items(f"items_source {path} is not JSON: {exc}") from None
    if s.item_key and isinstance(data, list):
        return [_by_key(item, s.item_key, "item_key") for item in data]
    if s.item_key:
        data = _by_key(data, s.item_key, "item_key")
    if not isinstance(data, list):
        raise Items(f"items_source {path} must hold a JSON array, got {type(data).__name__}")
    return data


def _by_key(data: Any, key: str, what: str) -> Any:
    for part in key.split("."):
        if not isinstance(data, dict):
            raise Items(f"{what} '{key}': cannot read '{part}' from {type(data).__name__}")
        if part not in data:
            raise Items(f"{what} '{key}': key '{part}' not found")
        data = data[part]
    return data


def _id(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else to_text(value)


def _tiers(workers: list[fanout.Worker], s: MatrixStrategy) -> list[list[fanout.Worker]]:
    """Items grouped into tiers by their dependencies (Kahn's algorithm, ids sorted in
    a tier); a duplicate id, an unknown dependency or a cycle is an error."""
    by_id: dict[str, fanout.Worker] = {}
    for w in workers:
        w.item_id = _id(_by_key(w.item, s.item_id_key or "", "item_id_key"))
        if w.item_id in by_id:
            raise Items(f"duplicate item id '{w.item_id}' (item {w.index})")
        by_id[w.item_id] = w
    deps = {i: _deps(w.item, s.dependency_key or "") for i, w in by_id.items()}
    for item_id, needs in deps.items():
        for dep in needs:
            if dep not in by_id:
                raise Items(f"item '{item_id}' depends on '{dep}', which is no item")
    tiers: list[list[fanout.Worker]] = []
    done: set[str] = set()
    while len(done) < len(by_id):
        ready = sorted(i for i in by_id if i not in done and set(deps[i]) <= done)
        if not ready:
            raise Items(f"dependency cycle among {len(by_id) - len(done)} items")
        tiers.append([by_id[i] for i in ready])
        done |= set(ready)
    return tiers


def _deps(item: Any, key: str) -> list[str]:
    try:
        value = _by_key(item, key, "dependency_key")
    except Items:
        return []  # no such key: no dependencies (as Wave)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Items(f"dependency_key '{key}' must give an array, got {type(value).__name__}")
    return [_id(v) for v in value]


def _skip(worker: fanout.Worker, s: MatrixStrategy, failed: set[str]) -> bool:
    """Skip an item whose dependency failed or was skipped (so is its dependents)."""
    if not s.dependency_key:
        return False
    bad = next((d for d in _deps(worker.item, s.dependency_key) if d in failed), None)
    if bad is not None:
        worker.skipped = f"dependency '{bad}' failed"
    return bad is not None


KIND = Matrix()
