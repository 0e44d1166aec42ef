"""A step's persona name as the run sees it.

Wave renders `persona:` before it looks the persona up (`{{ forge.type }}-commenter`
is `github-commenter` in a GitHub project; internal/pipeline/executor_dispatch.go).
The run (engine/visit/context.py), the Temporal client (executors/temporal) and preflight
(ops/preflight.py) all render it here, with the same variables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swell.manifest.loader import Project
from swell.manifest.models import Pipeline
from swell.templates.render import render_text


def templated(name: str | None) -> bool:
    return bool(name) and "{{" in (name or "")


def persona_variables(
    project: Project,
    *,
    forge: Mapping[str, str] | None = None,
    branch: Mapping[str, str] | None = None,
    run_id: str | None = None,
    pipeline_name: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What a persona name may use: the project, its forge and branch (detected when
    not given), and, once there is a run, its id, pipeline name and `env`."""
    from swell.engine.visit import forge as forges

    if forge is None:
        forge = forges.detect(project.root, project.manifest.metadata.forge).variables()
    if branch is None:
        branch = forges.git_variables(project.root)
    variables: dict[str, Any] = {
        "project": dict(project.manifest.project),
        "forge": dict(forge),
        "env": dict(env or {}),
        **branch,
    }
    if run_id is not None:
        variables["pipeline_id"] = run_id
    if pipeline_name is not None:
        variables["pipeline_name"] = pipeline_name
    return variables


def render_persona(name: str | None, variables: Mapping[str, Any]) -> str | None:
    """`name` rendered (None when it renders empty); a plain name as it is."""
    if not name or not templated(name):
        return name
    return render_text(name, variables).text.strip() or None


def rendered_personas(pipeline: Pipeline, variables: Mapping[str, Any]) -> dict[str, str | None]:
    """The rendered persona of each step whose persona is templated, by step id."""
    return {
        s.id: render_persona(s.persona, variables) for s in pipeline.steps if templated(s.persona)
    }


def with_personas(pipeline: Pipeline, personas: Mapping[str, str | None]) -> Pipeline:
    """`pipeline` with those steps' personas replaced (by step id)."""
    if not personas:
        return pipeline
    steps = [
        s.model_copy(update={"persona": personas[s.id]}) if s.id in personas else s
        for s in pipeline.steps
    ]
    return pipeline.model_copy(update={"steps": steps})
