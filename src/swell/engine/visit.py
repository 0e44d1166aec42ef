"""What surrounds one visit: its workspace, its injected artifacts, its template variables."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from swell.engine.context import RunPlan
from swell.engine.state import RunState
from swell.manifest.models import Step
from swell.manifest.templates import render_text
from swell.workspace.paths import PathEscape, inside

INJECTED_DIR = ".wave/artifacts"  # where Wave puts injected artifacts; kept for compatibility


def namespace(
    plan: RunPlan, state: RunState, step: Step, workspace: Path, injected: dict[str, str]
) -> dict[str, Any]:
    """Template variables for one visit (docs/manifest.md, "Templates")."""
    steps = {
        sid: {
            "outcome": s.outcome,
            "exit_code": s.exit_code,
            "visit": s.visit,
            "artifacts": dict(state.artifacts.get(sid, {})),
        }
        for sid, s in state.last.items()
    }
    arts = dict(injected)
    for art in step.output_artifacts:
        if art.path:
            arts.setdefault(art.name, str(workspace / art.path))
    return {
        "input": plan.input,
        "pipeline_id": plan.run_id,
        "pipeline_name": plan.pipeline.name,
        "run": {"id": plan.run_id},
        "step_id": step.id,
        "workspace": str(workspace),
        "project_root": str(plan.project.root),
        "project": dict(plan.project.manifest.project),
        "context": dict(state.context),
        "artifacts": arts,
        "steps": steps,
    }


def base_namespace(plan: RunPlan, state: RunState, step: Step) -> dict[str, Any]:
    """Variables available before the workspace is known (for worktree branch names)."""
    return namespace(plan, state, step, plan.workspace, {})


def render(ns: dict[str, Any]) -> Any:
    return lambda text: render_text(text, ns).text


def inject_artifacts(
    state: RunState, step: Step, workspace: Path
) -> tuple[dict[str, str], list[str]]:
    """Copy the artifacts a step asks for into `.wave/artifacts/<as>` of its workspace.

    Returns name → path of each copy, and problems (a missing, non-optional artifact).
    """
    injected: dict[str, str] = {}
    problems: list[str] = []
    for ref in step.memory.inject_artifacts:
        name = ref.as_ or ref.artifact
        source = state.artifacts.get(ref.step or "", {}).get(ref.artifact)
        if source is None or not Path(source).is_file():
            if not ref.optional:
                problems.append(
                    f"input artifact '{ref.artifact}' of step '{ref.step}' is not available "
                    f"(has '{ref.step}' run?)"
                )
            continue
        try:
            target = inside(workspace, f"{INJECTED_DIR}/{name}")
        except PathEscape as exc:
            problems.append(f"input artifact '{name}': {exc}")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(source).resolve() != target.resolve():
            shutil.copyfile(source, target)
        injected[name] = str(target)
    return injected, problems
