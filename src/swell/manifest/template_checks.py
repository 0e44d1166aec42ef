"""Template checks: every `{{ }}` a step renders must parse and be able to resolve, and
every value a script receives must sit where the shell reads it as data (a script that
puts one where it could be code is refused here, at the placeholder's file:line:col,
before any run starts; docs/security.md)."""

from __future__ import annotations

from pathlib import Path

from swell.errors import Problem
from swell.manifest.expressions import ExpressionError
from swell.manifest.lint_context import LintContext, contract_loc
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step
from swell.manifest.templates import ScriptRefused, Template, analyse_script, parse_template
from swell.manifest.yamlsrc import SourceMap

SIMPLE_VARS = {"input", "pipeline_id", "pipeline_name", "step_id", "workspace", "project_root"}
STEP_FIELDS = {"outcome", "exit_code", "artifacts", "visit"}


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


def check_templates(
    project: Project,
    loaded: LoadedPipeline,
    lint: LintContext,
    step: Step,
    loc: tuple[str | int, ...],
    ids: dict[str, int],
    context_keys: set[str],
) -> list[Problem]:
    """Template syntax, and variables that can never resolve, in everything a step renders."""
    problems: list[Problem] = []
    src, add = loaded.source, problems.append
    pipeline = loaded.pipeline
    own_artifacts = {a.name for a in step.output_artifacts}
    injected = {ref.as_ or ref.artifact for ref in step.memory.inject_artifacts}
    scripts = script_sources(step, lint)
    project_ns = {"project": dict(project.manifest.project)}
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
        for path in tpl.variables():
            reason = _unresolvable(
                path, project, pipeline.steps, ids, context_keys, own_artifacts | injected
            )
            if reason:
                add(src.problem((*loc, *where), reason))
    return problems


def _unresolvable(
    path: tuple[str | int, ...],
    project: Project,
    steps: list[Step],
    ids: dict[str, int],
    context_keys: set[str],
    artifacts: set[str],
) -> str | None:
    name = ".".join(str(p) for p in path)
    root, rest = str(path[0]), path[1:]
    if root in SIMPLE_VARS:
        return None if not rest else f"template variable '{name}' has no fields"
    if root == "run":
        return (
            None
            if [str(r) for r in rest] == ["id"]
            else f"unknown template variable '{name}' (use run.id)"
        )
    if root == "project":
        if rest and str(rest[0]) in project.manifest.project:
            return None
        return f"template variable '{name}' is not set in wave.yaml `project:`"
    if root == "context":
        if rest and str(rest[0]) in context_keys:
            return None
        return f"template variable '{name}' is never set by any step's output.context"
    if root == "artifacts":
        if rest and str(rest[0]) in artifacts:
            return None
        return f"template variable '{name}' names no artifact of this step"
    if root == "steps":
        if not rest or str(rest[0]) not in ids:
            return f"template variable '{name}' names an unknown step"
        if len(rest) < 2 or str(rest[1]) not in STEP_FIELDS:
            return (
                f"template variable '{name}': use steps.ID.artifacts.NAME, .outcome or .exit_code"
            )
        if str(rest[1]) == "artifacts":
            declared = {a.name for a in steps[ids[str(rest[0])]].output_artifacts}
            if len(rest) < 3 or str(rest[2]) not in declared:
                return f"template variable '{name}': step '{rest[0]}' declares no such artifact"
        return None
    return f"unknown template variable '{name}'"


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
