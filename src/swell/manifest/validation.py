"""`swell validate`: every problem of wave.yaml and the pipelines, in one pass.

Field problems do not stop the other checks: each file is validated with its invalid
values left out (`partial.py`), then linted (references, graph, templates). A
manifest that cannot be read at all still lets each pipeline's fields be checked.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from swell.errors import Problem, SwellError
from swell.manifest.discovery import MANIFEST_NAMES, find_project_root
from swell.manifest.lint import lint_pipeline, lint_project
from swell.manifest.lint_context import LintContext
from swell.manifest.loader import check_pipeline_file, check_project, pipeline_paths


@dataclass
class ValidationResult:
    manifest_name: str
    problems: list[Problem] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # pipelines examined
    failed: list[str] = field(default_factory=list)  # pipelines with an error

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]


def _errors(problems: list[Problem]) -> bool:
    return any(p.severity == "error" for p in problems)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while validating: checking a pipeline allocates
    millions of small objects, few in cycles, and the collector's passes over them
    were a third of the time of a 10,000-step pipeline (benchmarks/validate_scale.py).
    What it would have found is collected when it is turned on again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def validate_project(start: Path | None, lint: LintContext, only: str | None) -> ValidationResult:
    """Check the project at or above `start`: wave.yaml and every pipeline, or `only`."""
    with _no_cycle_collection():
        return _validate_project(start, lint, only)


def _validate_project(start: Path | None, lint: LintContext, only: str | None) -> ValidationResult:
    root = find_project_root(start)
    project, problems = check_project(root)
    name = next((n for n in MANIFEST_NAMES if (root / n).is_file()), MANIFEST_NAMES[0])
    result = ValidationResult(name, list(problems))
    if project is not None:
        result.problems += lint_project(project, lint).problems
    result.problems.sort(key=lambda p: (p.line, p.col))
    names = [only] if only else sorted(pipeline_paths(root))
    for pipeline in names:
        try:
            loaded, found = check_pipeline_file(root, pipeline)
        except SwellError as exc:  # no such pipeline (with a "did you mean")
            found, loaded = [Problem(pipeline, 0, 0, str(exc))], None
        # with every step left out for its own errors, lint would only add "no steps"
        emptied = loaded is not None and not loaded.pipeline.steps and _errors(found)
        if loaded is not None and project is not None and not emptied:
            found += lint_pipeline(project, loaded, lint).problems
        result.problems += sorted(found, key=lambda p: (p.line, p.col))
        result.checked.append(loaded.name if loaded else pipeline)
        if _errors(found):
            result.failed.append(loaded.name if loaded else pipeline)
    return result


__all__ = ["ValidationResult", "validate_project"]
