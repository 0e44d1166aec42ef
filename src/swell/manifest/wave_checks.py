"""Reference checks for Wave's pipeline-level fields: `pipeline_outputs`, cross-pipeline
`inject_artifacts`, `outcomes` (each at its file:line, with "did you mean")."""

from __future__ import annotations

import re

from swell.errors import PipelineNotFound, Problem
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.suggest import did_you_mean, unknown
from swell.manifest.template_names import declared
from swell.manifest.wave_models import SHARED_TYPES

# Wave's JSON paths: dotted keys, each with an optional [N], [*] or [] (outcomes)
_JSON_PATH = re.compile(r"\.?[\w-]+(\[(\d+|\*)?\])?(\.[\w-]+(\[(\d+|\*)?\])?)*")


def check_wave_fields(project: Project, loaded: LoadedPipeline) -> list[Problem]:
    p, src = loaded.pipeline, loaded.source
    steps = {s.id: s for s in p.steps}
    out: list[Problem] = []
    for name, target in p.pipeline_outputs.items():
        loc = ("pipeline_outputs", name)
        if target.step not in steps:
            out.append(src.problem((*loc, "step"), unknown("step", target.step, steps)))
        elif steps[target.step].pipeline is not None:
            pass  # a sub-pipeline step's artifacts are its child's (checked with the child)
        elif target.artifact not in declared(steps[target.step]):
            produced = declared(steps[target.step])
            out.append(
                src.problem(
                    (*loc, "artifact"),
                    f"step '{target.step}' declares no output artifact '{target.artifact}'"
                    + did_you_mean(target.artifact, produced),
                )
            )
        if target.type and target.type not in SHARED_TYPES:
            out.append(
                src.problem((*loc, "type"), unknown("pipeline I/O type", target.type, SHARED_TYPES))
            )
    for i, step in enumerate(p.steps):
        for j, ref in enumerate(step.memory.inject_artifacts):
            here = ("steps", i, "memory", "inject_artifacts", j)
            if ref.pipeline and ref.step:
                out.append(src.problem(here, "name either `step` or `pipeline`, not both"))
            elif ref.pipeline:
                out += _cross_pipeline(
                    project, loaded, here, ref.pipeline, ref.artifact, ref.optional
                )
            elif not ref.step:
                out.append(src.problem(here, "inject_artifacts entries need `step` or `pipeline`"))
        for j, outcome in enumerate(step.outcomes):
            path = outcome.json_path
            if path and not _JSON_PATH.fullmatch(path):
                out.append(
                    src.problem(
                        ("steps", i, "outcomes", j, "json_path"),
                        f"json_path {path!r} must be dotted keys, each with an optional "
                        "[N] or [*] (e.g. .items[*].url)",
                    )
                )
    return out


def _cross_pipeline(
    project: Project,
    loaded: LoadedPipeline,
    loc: tuple[str | int, ...],
    pipeline: str,
    artifact: str,
    optional: bool,
) -> list[Problem]:
    """The producing pipeline must exist and expose `artifact` in its pipeline_outputs."""
    from swell.manifest.loader import check_pipeline_file

    severity = "warning" if optional else "error"
    try:
        other, _ = check_pipeline_file(project.root, pipeline)
    except PipelineNotFound as exc:
        return [loaded.source.problem((*loc, "pipeline"), str(exc), severity=severity)]
    if other is None:
        return []  # its own problems are reported when it is validated
    exposed = other.pipeline.pipeline_outputs
    produced = {name for s in other.pipeline.steps for name in declared(s)}
    if artifact in exposed or artifact in produced:
        return []  # Wave's cross-pipeline map holds outputs and the steps' artifacts
    return [
        loaded.source.problem(
            (*loc, "artifact"),
            f"pipeline '{pipeline}' has no output or step artifact '{artifact}'"
            + did_you_mean(artifact, [*exposed, *produced]),
            severity=severity,
        )
    ]


__all__ = ["check_wave_fields"]
