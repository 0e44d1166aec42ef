"""Template checks: every `{{ }}` a step renders must parse and be able to resolve."""

from __future__ import annotations

from pathlib import Path

from swell.errors import Problem
from swell.manifest.expressions import ExpressionError
from swell.manifest.lint_context import contract_loc
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step
from swell.manifest.templates import parse_template

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


def check_templates(
    project: Project,
    loaded: LoadedPipeline,
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
    for where, text in template_sources(step, project.root):
        try:
            tpl = parse_template(text)
        except ExpressionError as exc:
            add(src.problem((*loc, *where), str(exc)))
            continue
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
