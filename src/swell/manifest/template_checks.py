"""Template checks: every `{{ }}` a step renders must parse and be able to resolve, and
every value a script receives must sit where the shell reads it as data (a script that
puts one where it could be code is refused here, at the placeholder's file:line:col,
before any run starts; docs/security.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from swell.errors import Problem
from swell.manifest.lint_context import LintContext, contract_loc
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step
from swell.manifest.template_names import FORGE_LINT_VALUES, Names, not_rendered, unresolvable
from swell.manifest.yamldoc import SourceMap
from swell.templates.expressions import ExpressionError
from swell.templates.render import ScriptRefused, Template, analyse_script, parse_template

# fields Wave renders with step-output references (`{{ STEP.output }}`, `.out.NAME`)
COMPOSITION_FIELDS = {("input",), ("iterate", "over"), ("aggregate", "from"), ("branch", "on")}


def template_sources(step: Step, root: Path) -> list[tuple[tuple[str | int, ...], str]]:
    out: list[tuple[tuple[str | int, ...], str]] = []
    if step.exec and step.exec.source:
        out.append((("exec", "source"), step.exec.source))
    if step.exec and step.exec.source_path:
        path = root / step.exec.source_path
        if path.is_file():
            out.append(
                (("exec", "source_path"), path.read_text(encoding="utf-8", errors="replace"))
            )
    if step.script:
        out.append((("script",), step.script))
    if step.input:
        out.append((("input",), step.input))
    # Wave renders these too: templated persona and pipeline names, composition fields
    extra: list[tuple[tuple[str | int, ...], str | None]] = [
        (("persona",), step.persona),
        (("pipeline",), step.pipeline),
        (("iterate", "over"), step.iterate.over if step.iterate else None),
        (("aggregate", "from"), step.aggregate.from_ if step.aggregate else None),
        (("branch", "on"), step.branch.on if step.branch else None),
        (("loop", "until"), step.loop.until if step.loop else None),
    ]
    for where, text in extra:
        if text and "{{" in text:
            out.append((where, text))
    if step.workspace and step.workspace.branch:
        out.append((("workspace", "branch"), step.workspace.branch))
    if step.gate:
        for name in ("message", "prompt"):
            text = getattr(step.gate, name)
            if text:
                out.append((("gate", name), text))
    if step.handover:
        # a contract type's settings are rendered as templates where they name commands,
        # files and criteria; any text with a placeholder is checked
        for i, contract in enumerate(step.handover.all_contracts):
            where = contract_loc((), step, i)
            for key, value in contract.settings.items():
                if isinstance(value, str) and "{{" in value:
                    out.append(((*where, key), value))
    return out


def script_sources(step: Step, lint: LintContext) -> set[tuple[str | int, ...]]:
    """Which of `template_sources` are shell scripts (rendered by `render_script`): what
    the step's kind and its contracts' types say are."""
    out: set[tuple[str | int, ...]] = set()
    if step.kind in lint.step_kinds:
        out.update(lint.step_kinds.get(step.kind).script_fields(step))
    if step.handover:
        for i, contract in enumerate(step.handover.all_contracts):
            if contract.type in lint.contract_types:
                fields = lint.contract_types.get(contract.type).script_fields
                out.update((*contract_loc((), step, i), name) for name in fields)
    return out


@dataclass(frozen=True)
class PipelineNames:
    """What every step of one pipeline may refer to, built once per pipeline: building
    it per step made checking an n-step pipeline O(n²)."""

    steps: dict[str, Step]
    gates: dict[str, None]  # ordered (for "did you mean") and O(1) to test
    context_keys: set[str]

    @classmethod
    def of(cls, loaded: LoadedPipeline, context_keys: set[str]) -> PipelineNames:
        steps = loaded.pipeline.steps
        gates = dict.fromkeys(s.id for s in steps if s.gate is not None)
        return cls({s.id: s for s in steps}, gates, context_keys)


def check_templates(
    project: Project,
    loaded: LoadedPipeline,
    lint: LintContext,
    step: Step,
    loc: tuple[str | int, ...],
    shared: PipelineNames,
) -> list[Problem]:
    """Template syntax, and variables that can never resolve, in everything a step renders."""
    problems: list[Problem] = []
    src, add = loaded.source, problems.append
    own_artifacts = {a.name for a in step.output_artifacts}
    injected = {ref.as_ or ref.artifact for ref in step.memory.inject_artifacts}
    base = Names(
        steps=shared.steps,
        project=project.manifest.project,
        context_keys=shared.context_keys,
        artifacts=own_artifacts | injected,
        dependencies=step.dependencies,
        gates=shared.gates,
    )
    scripts = script_sources(step, lint)
    project_ns = {"project": dict(project.manifest.project), "forge": FORGE_LINT_VALUES}
    for where, text in template_sources(step, project.root):
        try:
            tpl = parse_template(text)
        except ExpressionError as exc:
            add(src.problem((*loc, *where), str(exc)))
            continue
        if where in scripts and tpl.placeholders:
            place = _Placer(loaded.path, src, (*loc, *where), tpl)
            try:
                analysis = analyse_script(text, project_ns)
            except ScriptRefused as exc:
                add(place.problem(exc.offset, str(exc)))
            else:
                for warning in analysis.warnings:
                    add(place.problem(warning.offset, warning.message, "warning"))
        names = dataclasses.replace(
            base,
            composition=where in COMPOSITION_FIELDS,
            iterate=step.iterate is not None and where in (("pipeline",), ("input",)),
            task=step.strategy is not None and where[0] == "exec",
        )
        for path in tpl.variables():
            reason = unresolvable(path, names)
            if reason:
                add(src.problem((*loc, *where), reason))
                continue
            note = not_rendered(path, names)
            if note:
                add(src.problem((*loc, *where), note, severity="warning"))
    return _dedupe(problems)


def _dedupe(problems: list[Problem]) -> list[Problem]:
    """One problem per place and message (a prompt names `forge.type` ten times)."""
    seen: set[tuple[int, int, str]] = set()
    out: list[Problem] = []
    for p in problems:
        if (p.line, p.col, p.message) not in seen:
            seen.add((p.line, p.col, p.message))
            out.append(p)
    return out


class _Placer:
    """Problems at a placeholder's own file:line:col inside a YAML string: the n-th
    occurrence of its text, searched from where the string starts (any YAML style);
    the string's start when it cannot be found (an escape inside the braces)."""

    def __init__(self, path: Path, src: SourceMap, loc: tuple[str | int, ...], tpl: Template):
        self.path, self.src, self.loc, self.tpl = path, src, loc, tpl

    def problem(self, offset: int, message: str, severity: str = "error") -> Problem:
        line, col = self.src.locate(self.loc)
        starts = [s for s, _ in self.tpl.spans]
        if offset in starts:
            start, end = self.tpl.spans[starts.index(offset)]
            needle = self.tpl.source[start:end]
            nth = self.tpl.source.count(needle, 0, start)
            try:
                text = self.path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            lines = text.split("\n")
            pos = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
            for _ in range(nth):  # skip the occurrences of earlier, identical placeholders
                pos = text.find(needle, pos)
                pos = pos + len(needle) if pos >= 0 else -1
            pos = text.find(needle, pos) if pos >= 0 else -1
            if pos >= 0:
                line = text.count("\n", 0, pos) + 1
                col = pos - text.rfind("\n", 0, pos)
        return Problem(self.src.file, line, col, message, severity)
