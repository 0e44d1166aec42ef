"""Graph and reference checks behind `swell validate` (and every `swell run`).

Field-level validation happens in the loader; this module checks what only the
whole project can tell: references between steps, personas and adapters, loops
that can never be left, steps that can never run, templates that can never resolve.
"""

from __future__ import annotations

import dataclasses
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from swell.errors import ManifestError, Problem, SwellError
from swell.manifest.conditions import ConditionError, parse_condition
from swell.manifest.durations import parse_duration
from swell.manifest.graph_checks import check_graph
from swell.manifest.kind_fields import kind_field_problems
from swell.manifest.lint_context import LintContext, LintScope, StepRules, contract_loc
from swell.manifest.loader import (
    LoadedPipeline,
    Project,
    load_pipeline,
    unsupported_problems,
    validation_problems,
)
from swell.manifest.models import Contract, Step
from swell.manifest.suggest import did_you_mean, unknown
from swell.manifest.template_checks import PipelineNames, check_templates
from swell.manifest.template_names import declared
from swell.manifest.wave_checks import check_wave_fields
from swell.manifest.yamldoc import Loc, SourceMap
from swell.templates.expressions import ExpressionError
from swell.templates.render import parse_template

TERMINALS = ("_complete", "_fail")


@dataclass
class LintReport:
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "error"]

    def add(
        self,
        at: SourceMap | LintScope,
        loc: Loc,
        message: str,
        *,
        severity: str = "error",
        key: bool = False,
    ) -> None:
        """A problem at `loc` of `at`: a file's YAML, or below a step's place in it."""
        self.problems.append(at.problem(loc, message, severity=severity, key=key))

    def raise_errors(self) -> None:
        if self.errors:
            raise ManifestError(self.errors)


def lint_project(project: Project, ctx: LintContext) -> LintReport:
    """Checks on wave.yaml alone: personas, adapters, prompt files."""
    report = LintReport(list(project.warnings))
    m, src = project.manifest, project.source
    for name, config in m.adapters.items():
        kind = m.adapter_type(name)
        if kind not in ctx.adapter_types:
            known = ", ".join(sorted(ctx.adapter_types))
            report.add(
                src,
                ("adapters", name),
                f"adapter type '{kind}' is not available (known: {known})",
                key=True,
            )
            continue
        model = ctx.adapter_options(kind) if ctx.adapter_options else None
        if model is None:
            if config.options:
                report.add(
                    src,
                    ("adapters", name, "options"),
                    f"adapter type '{kind}' takes no options",
                    key=True,
                )
            continue
        try:
            model.model_validate(config.options)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ("adapters", name, "options", *err["loc"])
                field_name = ".".join(str(p) for p in err["loc"]) or "options"
                report.add(src, loc, f"options.{field_name}: {err['msg']}")

    def adapter_names() -> list[str]:  # for messages: listing plugins scans packages
        return [*m.adapters, *ctx.adapter_types]

    for primary, chain in m.runtime.fallbacks.items():
        # Wave's rules (internal/manifest/parser.go, validateFallbacks)
        if m.adapter_type(primary) not in ctx.adapter_types:
            report.add(
                src,
                ("runtime", "fallbacks", primary),
                unknown("adapter", primary, adapter_names()),
                key=True,
            )
        for i, name in enumerate(chain):
            where = ("runtime", "fallbacks", primary, i)
            if m.adapter_type(name) not in ctx.adapter_types:
                message = unknown("fallback adapter", name, adapter_names())
            elif name == primary:
                message = f"adapter '{primary}' cannot fall back to itself"
            elif name in chain[:i]:
                message = f"fallback adapter '{name}' is listed twice for '{primary}'"
            else:
                continue
            report.add(src, where, message)
    relay = m.runtime.relay
    if relay.summarizer_persona and relay.summarizer_persona not in m.personas:
        report.add(
            src,
            ("runtime", "relay", "summarizer_persona"),
            unknown("summarizer persona", relay.summarizer_persona, m.personas),
        )
    if relay.strategy and relay.strategy != "summarize_to_checkpoint":
        report.add(
            src,
            ("runtime", "relay", "strategy"),
            f"relay strategy '{relay.strategy}' is not known (summarize_to_checkpoint)",
        )
    for name, persona in m.personas.items():
        loc = ("personas", name)
        if persona.adapter is None:
            report.add(src, loc, f"persona '{name}' has no adapter", key=True)
        elif persona.adapter not in m.adapters and persona.adapter not in ctx.adapter_types:
            report.add(
                src,
                (*loc, "adapter"),
                f"persona '{name}' uses "
                + unknown("adapter", persona.adapter, [*m.adapters, *ctx.adapter_types]),
            )
        if persona.system_prompt_file:
            why = _not_a_file(project.root / persona.system_prompt_file)
            if why:
                report.add(
                    src,
                    (*loc, "system_prompt_file"),
                    f"system prompt file {persona.system_prompt_file} {why}",
                )
    return report


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"))  # fmt: skip


def _not_a_file(path: Path) -> str | None:
    """Why `path` is no file to read a prompt from ("does not exist", "is not a regular
    file (a FIFO)"), or None: a FIFO there would read as missing, or hang a reader."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return "does not exist"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    kind = next((f" ({what})" for test, what in _KINDS if test(mode)), "")
    return f"is not a regular file{kind}"


def lint_pipeline(project: Project, loaded: LoadedPipeline, ctx: LintContext) -> LintReport:
    """Every graph, reference and template check on one pipeline."""
    report = LintReport(list(loaded.warnings))
    p, src = loaded.pipeline, loaded.source
    steps = p.steps
    if not steps:
        report.add(src, ("steps",), "pipeline has no steps")
        return report

    ids: dict[str, int] = {}
    for i, step in enumerate(steps):
        if step.id in ids:
            report.add(src, ("steps", i, "id"), f"duplicate step id '{step.id}'")
        else:
            ids[step.id] = i
    dependents: dict[str, list[str]] = {}
    for step in steps:
        for dep in step.dependencies:
            dependents.setdefault(dep, []).append(step.id)

    context_keys = _context_keys(project.root, steps)
    names = PipelineNames.of(loaded, context_keys)

    for i, step in enumerate(steps):
        loc: tuple[str | int, ...] = ("steps", i)
        kind = step.kind
        if kind not in ctx.step_kinds:
            report.add(
                src,
                (*loc, "type"),
                f"unknown step type '{kind}' (known: {', '.join(ctx.step_kinds)})",
            )
        for j, dep in enumerate(step.dependencies):
            if dep == step.id:
                report.add(src, (*loc, "dependencies", j), f"step '{step.id}' depends on itself")
            elif dep not in ids:
                report.add(src, (*loc, "dependencies", j), unknown("dependency", dep, ids))
        for j, edge in enumerate(step.edges):
            if edge.target not in ids and edge.target not in TERMINALS:
                report.add(
                    src,
                    (*loc, "edges", j, "target"),
                    f"edge to {unknown('step', edge.target, [*ids, *TERMINALS])}",
                )
            try:
                cond = parse_condition(edge.condition)
            except ConditionError as exc:
                report.add(src, (*loc, "edges", j, "condition"), str(exc))
                continue
            for key in cond.context_keys():
                if key not in context_keys:
                    report.add(
                        src,
                        (*loc, "edges", j, "condition"),
                        f"context.{key} is never set by any step's output.context",
                        severity="warning",
                    )
        if step.edges and any(e.condition is None for e in step.edges[:-1]):
            first = next(j for j, e in enumerate(step.edges) if e.condition is None)
            report.add(
                src,
                (*loc, "edges", first + 1),
                "edges after an unconditional edge can never be taken",
                severity="warning",
            )
        scope = LintScope(project, loaded, step, loc, ids, ctx)
        if kind in ctx.step_kinds:
            rules = ctx.step_kinds.get(kind)
            own = kind_field_problems(scope, rules)
            # a field the kind does not know is reported alone, as the loader would
            report.problems += own or rules.problems(scope)
            _lint_retry(scope, rules, report)
        _lint_workspace(project, loaded, step, loc, ids, report)
        _lint_contracts(scope, report)
        compaction = step.handover.compaction if step.handover else None
        if (
            compaction
            and compaction.persona
            and compaction.persona not in project.manifest.personas
        ):
            report.add(
                src,
                (*loc, "handover", "compaction", "persona"),
                f"unknown summarizer persona '{compaction.persona}'",
            )
        if (
            compaction
            and compaction.trigger
            and not re.fullmatch(r"\s*token_limit_\d+(\.\d+)?%?\s*", compaction.trigger)
        ):
            report.add(
                src,
                (*loc, "handover", "compaction", "trigger"),
                f"trigger must look like token_limit_80%, not {compaction.trigger!r}",
            )
        report.problems += check_templates(project, loaded, ctx, step, loc, names)
        for j, art in enumerate(step.output_artifacts):
            if art.source == "file" and not art.path:
                report.add(
                    src, (*loc, "output_artifacts", j), f"artifact '{art.name}' needs a path"
                )
            if art.path and (Path(art.path).is_absolute() or ".." in Path(art.path).parts):
                report.add(
                    src,
                    (*loc, "output_artifacts", j, "path"),
                    "artifact paths must stay inside the workspace",
                )
        for j, ref in enumerate(step.memory.inject_artifacts):
            if ref.step and ref.step not in ids:
                report.add(
                    src,
                    (*loc, "memory", "inject_artifacts", j, "step"),
                    unknown("step", ref.step, ids),
                )
            elif (
                ref.step
                and steps[ids[ref.step]].pipeline is None  # else its child's (and its outputs)
                and ref.artifact not in declared(steps[ids[ref.step]])
            ):
                hint = did_you_mean(ref.artifact, declared(steps[ids[ref.step]]))
                report.add(
                    src,
                    (*loc, "memory", "inject_artifacts", j, "artifact"),
                    f"step '{ref.step}' declares no output artifact '{ref.artifact}'{hint}",
                )
        if step.output:
            for key, expr in step.output.context.items():
                if isinstance(expr, str) and "{{" in expr:
                    try:
                        parse_template(expr)
                    except ExpressionError as exc:
                        report.add(src, (*loc, "output", "context", key), str(exc))
        if step.fidelity and step.fidelity != "fresh" and not step.thread:
            report.add(
                src,
                (*loc, "fidelity"),
                "`fidelity` has no effect without `thread`",
                severity="warning",
            )

    report.problems += check_wave_fields(project, loaded)
    if report.errors:
        return report  # graph checks need valid references
    report.problems += check_graph(loaded, dependents, lambda s: ctx.step_kinds.get(s.kind))
    return report


def _lint_workspace(
    project: Project,
    loaded: LoadedPipeline,
    step: Step,
    loc: tuple[str | int, ...],
    ids: dict[str, int],
    report: LintReport,
) -> None:
    config, src = step.workspace, loaded.source
    if config is None:
        return
    if config.ref and config.ref not in ids:
        report.add(
            src,
            (*loc, "workspace", "ref"),
            f"workspace.ref names {unknown('step', config.ref, ids)}",
        )
    for j, mount in enumerate(config.mount):
        source = (project.root / mount.source).resolve()
        if project.root.resolve() not in (source, *source.parents):
            report.add(
                src,
                (*loc, "workspace", "mount", j, "source"),
                "mount sources must be inside the project",
            )
        elif not source.exists():
            report.add(
                src,
                (*loc, "workspace", "mount", j, "source"),
                f"mount source {mount.source} does not exist",
            )
    if config.type == "worktree" and config.mount:
        report.add(
            src,
            (*loc, "workspace"),
            "a worktree already holds the project; mounts apply to directory workspaces",
            severity="warning",
        )


def _lint_retry(scope: LintScope, rules: StepRules, report: LintReport) -> None:
    """`retry:`: a kind that cannot be tried again refuses it; its delays must parse;
    `on_failure: rework` and `rework_step` come together (as Wave checks), and the
    target is a step, best a `rework_only` one."""
    step = scope.step
    retry = step.retry
    if retry is None:
        return
    if rules.retries is None:
        report.add(
            scope,
            ("retry",),
            f"`retry` has no effect on a {step.kind} step (it has nothing to try again); remove it",
            key=True,
        )
        return
    for name in ("base_delay", "max_delay"):
        value = getattr(retry, name)
        if value is None:
            continue
        try:
            parse_duration(value)
        except ValueError as exc:
            report.add(scope, ("retry", name), str(exc))
    if retry.on_failure == "rework" and not retry.rework_step:
        report.add(scope, ("retry", "on_failure"), "retry.on_failure: rework needs a `rework_step`")
    elif retry.rework_step and retry.on_failure != "rework":
        report.add(
            scope,
            ("retry", "rework_step"),
            "retry.rework_step is only used with `on_failure: rework`; set that, or "
            "put `rework_step` on the contract",
        )
    elif retry.rework_step:
        where = ("retry", "rework_step")
        for message, severity in _rework_target(scope, retry.rework_step, strict=True):
            report.add(scope, where, message, severity=severity)
        steps = scope.loaded.pipeline.steps
        first = next(
            (s for s in steps if s.retry and s.retry.on_failure == "rework"
             and s.retry.rework_step == retry.rework_step),
            None,
        )  # fmt: skip
        if first is not None and first.id != scope.step.id:
            report.add(
                scope,
                where,
                f"rework target '{retry.rework_step}' is used by both step '{first.id}' "
                f"and step '{scope.step.id}' (as in Wave, each step needs its own: two "
                "failures at once would share one rework)",
            )


def _depends_on(steps: Mapping[str, Step], step: str, on: str) -> bool:
    """Whether `step` depends on `on`, directly or through other steps."""
    seen: set[str] = set()
    todo = list(steps[step].dependencies) if step in steps else []
    while todo:
        dep = todo.pop()
        if dep == on:
            return True
        if dep not in seen and dep in steps:
            seen.add(dep)
            todo += steps[dep].dependencies
    return False


def _rework_target(scope: LintScope, target: str, *, strict: bool) -> list[tuple[str, str]]:
    """What is wrong with `target` as the rework step of `scope.step` (message,
    severity), by Wave's rules (internal/pipeline/dag.go, validateReworkTarget): it
    exists, is another step, is `rework_only` (`strict`: an error, else a warning),
    and is neither upstream nor downstream of the step it reworks."""
    if target not in scope.ids:
        return [(f"rework_step names {unknown('step', target, scope.ids)}", "error")]
    me = scope.step.id
    if target == me:
        return [(f"step '{me}' cannot be its own rework_step", "error")]
    steps = {s.id: s for s in scope.loaded.pipeline.steps}
    found: list[tuple[str, str]] = []
    if not steps[target].rework_only:
        found.append(
            (
                f"rework_step '{target}' should be `rework_only: true` "
                "(it would also run in the normal flow)",
                "error" if strict else "warning",
            )
        )
    if _depends_on(steps, me, target):
        found.append(
            (f"rework_step '{target}' is a step '{me}' depends on; it cannot rework it", "error")
        )
    if _depends_on(steps, target, me):
        found.append(
            (
                f"rework_step '{target}' depends on step '{me}', which it reworks: it could "
                "never start",
                "error",
            )
        )
    return found


def _lint_contracts(scope: LintScope, report: LintReport) -> None:
    """Each contract's type and settings (checked by the type itself), rework targets,
    and the order: mechanical checks before agent checks."""
    step = scope.step
    if not step.handover:
        return
    if step.handover.contract is not None and step.handover.contracts:
        report.add(
            scope,
            ("handover", "contract"),
            "`handover.contract` is ignored because `handover.contracts` is set (as in "
            "Wave); move it into `contracts` to run it",
            severity="warning",
            key=True,
        )
    types = scope.lint.contract_types
    after_agent: str | None = None
    for i, contract in enumerate(step.handover.all_contracts):
        here = dataclasses.replace(scope, loc=contract_loc(scope.loc, step, i))
        if contract.type not in types:
            known = ", ".join(types)
            report.add(here, ("type",), f"unknown contract type '{contract.type}' (known: {known})")
            continue
        kind = types.get(contract.type)
        try:
            settings = kind.Settings.model_validate(contract.settings)
        except ValidationError as exc:
            source = scope.loaded.source
            report.problems += validation_problems(exc, kind.Settings, source, here.loc)
            continue
        report.problems += unsupported_problems(
            kind.Settings, contract.settings, here.loc, scope.loaded.source
        )
        report.problems += kind.problems(settings, here)
        if not kind.mechanical:
            after_agent = after_agent or contract.type
        elif after_agent:
            report.add(
                here,
                (),
                f"the {contract.type} contract runs after an {after_agent}; put mechanical "
                "checks first so a failing test never costs a review",
                severity="warning",
            )
        _lint_rework(here, contract, report)


def _lint_rework(scope: LintScope, contract: Contract, report: LintReport) -> None:
    if contract.on_failure != "rework":
        return
    step = scope.step
    target = contract.rework_step or (step.retry.rework_step if step.retry else None)
    if not target:  # valid in Wave, which fails the step when the contract fails
        report.add(
            scope,
            ("on_failure",),
            "on_failure: rework needs a `rework_step` (here or in the step's `retry`); "
            "without one, this contract failing fails the step",
            severity="warning",
        )
    elif contract.rework_step:  # the step's retry.rework_step is checked with the retry
        # Wave holds an agent_review's target to its rules strictly (dag.go)
        strict = contract.type == "agent_review"
        for message, severity in _rework_target(scope, target, strict=strict):
            report.add(scope, ("rework_step",), message, severity=severity)


def _context_keys(root: Path, steps: list[Step]) -> set[str]:
    """Context keys the pipeline's steps can set: their `output.context`, that of a loop's
    sub-steps, and that of the steps of the sub-pipelines they run by name (a child's
    context is merged into its parent's; docs/composition.md)."""
    keys = {k for s in steps if s.output for k in s.output.context}
    children: set[str] = set()
    for step in steps:
        for raw in step.loop.steps if step.loop else []:
            output = raw.get("output") if isinstance(raw, dict) else None
            if isinstance(output, dict) and isinstance(output.get("context"), dict):
                keys |= {str(k) for k in output["context"]}
        children |= {step.pipeline or ""} | set(step.branch.cases.values() if step.branch else [])
    for name in sorted(n for n in children if n and n != "skip" and "{{" not in n):
        try:
            child = load_pipeline(root, name).pipeline
        except (SwellError, OSError):
            continue  # reported where the step names it
        keys |= {k for s in child.steps if s.output for k in s.output.context}
    return keys


__all__ = ["LintContext", "LintReport", "lint_pipeline", "lint_project"]
