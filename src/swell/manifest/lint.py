"""Graph and reference checks behind `swell validate` (and every `swell run`).

Field-level validation happens in the loader; this module checks what only the
whole project can tell: references between steps, personas and adapters, loops
that can never be left, steps that can never run, templates that can never resolve.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from swell.errors import ManifestError, PipelineNotFound, Problem
from swell.manifest.conditions import ConditionError, parse_condition
from swell.manifest.durations import parse_duration
from swell.manifest.expressions import ExpressionError
from swell.manifest.graph_checks import check_graph, entry_steps
from swell.manifest.loader import LoadedPipeline, Project, resolve_pipeline
from swell.manifest.models import Step
from swell.manifest.template_checks import check_templates
from swell.manifest.templates import parse_template

TERMINALS = ("_complete", "_fail")


@dataclass
class LintContext:
    """What the registries know, handed in so this package imports no engine code."""

    step_kinds: Collection[str]
    adapter_types: Collection[str]
    # adapter type -> the pydantic model of its `options:` (None: takes no options)
    adapter_options: Callable[[str], type[BaseModel] | None] | None = None
    # adapter type -> whether it enforces allowed/denied tools
    enforces_permissions: Callable[[str], bool] | None = None
    contract_types: Collection[str] = ()


@dataclass
class LintReport:
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    def raise_errors(self) -> None:
        if self.errors:
            raise ManifestError(self.errors)


def lint_project(project: Project, ctx: LintContext) -> LintReport:
    """Checks on wave.yaml alone: personas, adapters, prompt files."""
    report = LintReport()
    m, src = project.manifest, project.source
    for name, config in m.adapters.items():
        kind = m.adapter_type(name)
        if kind not in ctx.adapter_types:
            known = ", ".join(sorted(ctx.adapter_types))
            report.problems.append(
                src.problem(
                    ("adapters", name),
                    f"adapter type '{kind}' is not available (known: {known})",
                    key=True,
                )
            )
            continue
        model = ctx.adapter_options(kind) if ctx.adapter_options else None
        if model is None:
            if config.options:
                report.problems.append(
                    src.problem(
                        ("adapters", name, "options"),
                        f"adapter type '{kind}' takes no options",
                        key=True,
                    )
                )
            continue
        try:
            model.model_validate(config.options)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ("adapters", name, "options", *err["loc"])
                field_name = ".".join(str(p) for p in err["loc"]) or "options"
                report.problems.append(src.problem(loc, f"options.{field_name}: {err['msg']}"))
    relay = m.runtime.relay
    if relay.summarizer_persona and relay.summarizer_persona not in m.personas:
        report.problems.append(
            src.problem(
                ("runtime", "relay", "summarizer_persona"),
                f"unknown summarizer persona '{relay.summarizer_persona}'",
            )
        )
    if relay.strategy and relay.strategy != "summarize_to_checkpoint":
        report.problems.append(
            src.problem(
                ("runtime", "relay", "strategy"),
                f"relay strategy '{relay.strategy}' is not known (summarize_to_checkpoint)",
            )
        )
    for name, persona in m.personas.items():
        loc = ("personas", name)
        if persona.adapter is None:
            report.problems.append(src.problem(loc, f"persona '{name}' has no adapter", key=True))
        elif persona.adapter not in m.adapters and persona.adapter not in ctx.adapter_types:
            report.problems.append(
                src.problem(
                    (*loc, "adapter"), f"persona '{name}' uses unknown adapter '{persona.adapter}'"
                )
            )
        if persona.system_prompt_file:
            path = project.root / persona.system_prompt_file
            if not path.is_file():
                report.problems.append(
                    src.problem(
                        (*loc, "system_prompt_file"),
                        f"system prompt file {persona.system_prompt_file} does not exist",
                    )
                )
    return report


def lint_pipeline(project: Project, loaded: LoadedPipeline, ctx: LintContext) -> LintReport:
    """Every graph, reference and template check on one pipeline."""
    report = LintReport()
    p, src = loaded.pipeline, loaded.source
    add = report.problems.append
    steps = p.steps
    if not steps:
        add(src.problem(("steps",), "pipeline has no steps"))
        return report

    ids: dict[str, int] = {}
    for i, step in enumerate(steps):
        if step.id in ids:
            add(src.problem(("steps", i, "id"), f"duplicate step id '{step.id}'"))
        else:
            ids[step.id] = i
    dependents: dict[str, list[str]] = {}
    for step in steps:
        for dep in step.dependencies:
            dependents.setdefault(dep, []).append(step.id)

    context_keys = {k for s in steps if s.output for k in s.output.context}

    for i, step in enumerate(steps):
        loc: tuple[str | int, ...] = ("steps", i)
        kind = step.kind
        if kind not in ctx.step_kinds:
            add(
                src.problem(
                    (*loc, "type"),
                    f"unknown step type '{kind}' (known: {', '.join(sorted(ctx.step_kinds))})",
                )
            )
        for j, dep in enumerate(step.dependencies):
            if dep == step.id:
                add(src.problem((*loc, "dependencies", j), f"step '{step.id}' depends on itself"))
            elif dep not in ids:
                add(src.problem((*loc, "dependencies", j), f"unknown dependency '{dep}'"))
        for j, edge in enumerate(step.edges):
            if edge.target not in ids and edge.target not in TERMINALS:
                add(
                    src.problem(
                        (*loc, "edges", j, "target"), f"edge to unknown step '{edge.target}'"
                    )
                )
            try:
                cond = parse_condition(edge.condition)
            except ConditionError as exc:
                add(src.problem((*loc, "edges", j, "condition"), str(exc)))
                continue
            for key in cond.context_keys():
                if key not in context_keys:
                    add(
                        src.problem(
                            (*loc, "edges", j, "condition"),
                            f"context.{key} is never set by any step's output.context",
                            severity="warning",
                        )
                    )
        if step.edges and any(e.condition is None for e in step.edges[:-1]):
            first = next(j for j, e in enumerate(step.edges) if e.condition is None)
            add(
                src.problem(
                    (*loc, "edges", first + 1),
                    "edges after an unconditional edge can never be taken",
                    severity="warning",
                )
            )
        _lint_kind(project, loaded, step, loc, ids, ctx, report)
        _lint_workspace(project, loaded, step, loc, ids, report)
        _lint_contracts(project, loaded, step, loc, ids, ctx, report)
        compaction = step.handover.compaction if step.handover else None
        if (
            compaction
            and compaction.persona
            and compaction.persona not in project.manifest.personas
        ):
            add(
                src.problem(
                    (*loc, "handover", "compaction", "persona"),
                    f"unknown summarizer persona '{compaction.persona}'",
                )
            )
        if (
            compaction
            and compaction.trigger
            and not re.fullmatch(r"\s*token_limit_\d+(\.\d+)?%?\s*", compaction.trigger)
        ):
            add(
                src.problem(
                    (*loc, "handover", "compaction", "trigger"),
                    f"trigger must look like token_limit_80%, not {compaction.trigger!r}",
                )
            )
        report.problems += check_templates(project, loaded, step, loc, ids, context_keys)
        for j, art in enumerate(step.output_artifacts):
            if art.source == "file" and not art.path:
                add(
                    src.problem(
                        (*loc, "output_artifacts", j), f"artifact '{art.name}' needs a path"
                    )
                )
            if art.path and (Path(art.path).is_absolute() or ".." in Path(art.path).parts):
                add(
                    src.problem(
                        (*loc, "output_artifacts", j, "path"),
                        "artifact paths must stay inside the workspace",
                    )
                )
        for j, ref in enumerate(step.memory.inject_artifacts):
            if ref.step and ref.step not in ids:
                add(
                    src.problem(
                        (*loc, "memory", "inject_artifacts", j, "step"),
                        f"unknown step '{ref.step}'",
                    )
                )
            elif ref.step and ref.artifact not in {
                a.name for a in steps[ids[ref.step]].output_artifacts
            }:
                add(
                    src.problem(
                        (*loc, "memory", "inject_artifacts", j, "artifact"),
                        f"step '{ref.step}' declares no output artifact '{ref.artifact}'",
                    )
                )
        if step.output:
            for key, expr in step.output.context.items():
                if isinstance(expr, str) and "{{" in expr:
                    try:
                        parse_template(expr)
                    except ExpressionError as exc:
                        add(src.problem((*loc, "output", "context", key), str(exc)))
        if step.fidelity and step.fidelity != "fresh" and not step.thread:
            add(
                src.problem(
                    (*loc, "fidelity"),
                    "`fidelity` has no effect without `thread`",
                    severity="warning",
                )
            )

    if report.errors:
        return report  # graph checks need valid references
    report.problems += check_graph(loaded, dependents)
    return report


def _lint_kind(
    project: Project,
    loaded: LoadedPipeline,
    step: Step,
    loc: tuple[str | int, ...],
    ids: dict[str, int],
    ctx: LintContext,
    report: LintReport,
) -> None:
    src, add, kind = loaded.source, report.problems.append, step.kind
    m = project.manifest
    if kind == "command":
        if not step.script and not (step.exec and step.exec.source):
            add(src.problem(loc, f"command step '{step.id}' needs a `script` (or exec.source)"))
    elif kind == "prompt":
        if not step.persona and not step.adapter:
            add(src.problem(loc, f"prompt step '{step.id}' needs a persona"))
        if step.persona and step.persona not in m.personas:
            known = ", ".join(sorted(m.personas)) or "none defined"
            add(
                src.problem((*loc, "persona"), f"unknown persona '{step.persona}' (known: {known})")
            )
        if not step.exec or not (step.exec.source or step.exec.source_path):
            add(src.problem(loc, f"prompt step '{step.id}' needs exec.source or exec.source_path"))
        elif step.exec.source_path and not (project.root / step.exec.source_path).is_file():
            add(
                src.problem(
                    (*loc, "exec", "source_path"),
                    f"prompt file {step.exec.source_path} does not exist",
                )
            )
        adapter = step.adapter or (
            m.personas[step.persona].adapter if step.persona in m.personas else None
        )
        if (
            step.adapter
            and step.adapter not in m.adapters
            and step.adapter not in ctx.adapter_types
        ):
            add(src.problem((*loc, "adapter"), f"unknown adapter '{step.adapter}'"))
        elif (
            adapter
            and project.manifest.adapter_type(adapter) in ctx.adapter_types
            and ctx.enforces_permissions
        ):
            persona = m.personas.get(step.persona or "")
            config = m.adapters.get(adapter)
            denied = (persona.permissions.deny if persona else []) + (
                config.default_permissions.deny if config else []
            )
            if denied and not ctx.enforces_permissions(project.manifest.adapter_type(adapter)):
                add(
                    src.problem(
                        (*loc, "persona"),
                        f"adapter '{adapter}' cannot enforce denied tools ({', '.join(denied)}); "
                        "the run will record this",
                        severity="warning",
                    )
                )
        elif adapter and project.manifest.adapter_type(adapter) not in ctx.adapter_types:
            add(
                src.problem(
                    (*loc, "persona"),
                    f"adapter '{adapter}' is not available "
                    f"(known: {', '.join(sorted(ctx.adapter_types))})",
                )
            )
    elif kind == "conditional":
        if not step.edges:
            add(src.problem(loc, f"conditional step '{step.id}' needs edges"))
    elif kind == "gate":
        gate = step.gate
        if gate is None:
            return
        if gate.type in ("pr_merge", "ci_pass"):
            add(
                src.problem((*loc, "gate", "type"), f"gate type `{gate.type}` is not supported yet")
            )
        keys = [c.key for c in gate.choices]
        for j, choice in enumerate(gate.choices):
            if keys.count(choice.key) > 1:
                add(
                    src.problem(
                        (*loc, "gate", "choices", j, "key"), f"duplicate choice key '{choice.key}'"
                    )
                )
            if choice.target and choice.target not in ids and choice.target not in TERMINALS:
                add(
                    src.problem(
                        (*loc, "gate", "choices", j, "target"),
                        f"choice targets unknown step '{choice.target}'",
                    )
                )
        if gate.default and gate.choices and gate.default not in keys:
            add(
                src.problem(
                    (*loc, "gate", "default"), f"default '{gate.default}' is not a choice key"
                )
            )
        if gate.timeout is not None:
            try:
                parse_duration(gate.timeout)
            except ValueError as exc:
                add(src.problem((*loc, "gate", "timeout"), str(exc)))
        elif gate.type == "timer":
            add(src.problem((*loc, "gate"), "a timer gate needs a timeout"))
    elif kind == "pipeline":
        if not step.pipeline:
            add(src.problem(loc, f"pipeline step '{step.id}' needs `pipeline: NAME`"))
            return
        try:
            target = resolve_pipeline(project.root, step.pipeline)
        except PipelineNotFound as exc:
            add(src.problem((*loc, "pipeline"), str(exc)))
            return
        if target.resolve() == loaded.path.resolve():
            add(src.problem((*loc, "pipeline"), "a pipeline cannot run itself as a sub-pipeline"))


def _lint_workspace(
    project: Project,
    loaded: LoadedPipeline,
    step: Step,
    loc: tuple[str | int, ...],
    ids: dict[str, int],
    report: LintReport,
) -> None:
    config, src, add = step.workspace, loaded.source, report.problems.append
    if config is None:
        return
    if config.ref and config.ref not in ids:
        add(
            src.problem(
                (*loc, "workspace", "ref"), f"workspace.ref names unknown step '{config.ref}'"
            )
        )
    for j, mount in enumerate(config.mount):
        source = (project.root / mount.source).resolve()
        if project.root.resolve() not in (source, *source.parents):
            add(
                src.problem(
                    (*loc, "workspace", "mount", j, "source"),
                    "mount sources must be inside the project",
                )
            )
        elif not source.exists():
            add(
                src.problem(
                    (*loc, "workspace", "mount", j, "source"),
                    f"mount source {mount.source} does not exist",
                )
            )
    if config.type == "worktree" and config.mount:
        add(
            src.problem(
                (*loc, "workspace"),
                "a worktree already holds the project; mounts apply to directory workspaces",
                severity="warning",
            )
        )


MECHANICAL = ("test_suite", "json_schema", "non_empty_file")


def _lint_contracts(
    project: Project,
    loaded: LoadedPipeline,
    step: Step,
    loc: tuple[str | int, ...],
    ids: dict[str, int],
    ctx: LintContext,
    report: LintReport,
) -> None:
    """Contract types and their required fields, reviewers, rework targets, order."""
    if not step.handover:
        return
    src, add, m = loaded.source, report.problems.append, project.manifest
    single = step.handover.contract is not None
    seen_review = False
    for i, contract in enumerate(step.handover.all_contracts):
        if single and i == 0:
            cloc: tuple[str | int, ...] = (*loc, "handover", "contract")
        else:
            cloc = (*loc, "handover", "contracts", i - (1 if single else 0))
        kind = contract.type
        if ctx.contract_types and kind not in ctx.contract_types:
            add(
                src.problem(
                    (*cloc, "type"),
                    f"unknown contract type '{kind}' "
                    f"(known: {', '.join(sorted(ctx.contract_types))})",
                )
            )
            continue
        needs = {
            "test_suite": contract.command,
            "non_empty_file": contract.source,
            "json_schema": contract.schema_ or contract.schema_path,
        }
        if kind in needs and not needs[kind]:
            field_name = {
                "test_suite": "command",
                "non_empty_file": "source",
                "json_schema": "schema or schema_path",
            }[kind]
            add(src.problem(cloc, f"a {kind} contract needs `{field_name}`"))
        for attr in ("schema_path", "criteria_path"):
            rel = getattr(contract, attr)
            if rel and "{{" not in rel and not (project.root / rel).is_file():
                add(src.problem((*cloc, attr), f"{attr} {rel} does not exist"))
        if kind == "agent_review":
            reviewer = contract.reviewer or contract.persona
            if not reviewer:
                add(src.problem(cloc, "an agent_review contract needs a `reviewer` persona"))
            elif reviewer not in m.personas:
                add(
                    src.problem(
                        (*cloc, "reviewer" if contract.reviewer else "persona"),
                        f"unknown reviewer persona '{reviewer}'",
                    )
                )
            elif reviewer == step.persona:
                add(
                    src.problem(
                        (*cloc, "reviewer" if contract.reviewer else "persona"),
                        f"self-review: the reviewer must not be the step's own persona '{reviewer}'",
                    )
                )
            seen_review = True
        elif seen_review and kind in MECHANICAL:
            add(
                src.problem(
                    cloc,
                    f"the {kind} contract runs after an agent_review; put mechanical "
                    "checks first so a failing test never costs a review",
                    severity="warning",
                )
            )
        if contract.on_failure == "rework":
            target = contract.rework_step or (step.retry.rework_step if step.retry else None)
            if not target:
                add(src.problem((*cloc, "on_failure"), "on_failure: rework needs a `rework_step`"))
            elif target not in ids:
                add(
                    src.problem(
                        (*cloc, "rework_step"), f"rework_step names unknown step '{target}'"
                    )
                )
            elif not loaded.pipeline.steps[ids[target]].rework_only:
                add(
                    src.problem(
                        (*cloc, "rework_step"),
                        f"rework_step '{target}' should be `rework_only: true` "
                        "(it would also run in the normal flow)",
                        severity="warning",
                    )
                )


__all__ = [
    "LintContext",
    "LintReport",
    "entry_steps",
    "lint_pipeline",
    "lint_project",
]
