"""A step kind's own fields (`StepKind.Fields`): refused by name when the kind does not
declare them, else checked by the kind's model, each problem at its file:line:col."""

from __future__ import annotations

from pydantic import ValidationError

from swell.errors import Problem
from swell.manifest.lint_context import LintScope, StepRules
from swell.manifest.loader import validation_problems
from swell.manifest.models import Step
from swell.manifest.suggest import did_you_mean


def kind_field_problems(scope: LintScope, rules: StepRules) -> list[Problem]:
    """What is wrong with the fields `scope.step` holds beyond the step model's own."""
    written = scope.step.kind_fields
    if not written:
        return []
    model = rules.Fields
    declared = dict(model.model_fields) if model else {}
    known = [*Step.model_fields, *declared]
    problems = [
        scope.problem((key,), f"unknown field '{key}'{did_you_mean(key, known)}", key=True)
        for key in written
        if key not in declared
    ]
    if problems or model is None:
        return problems
    try:
        model.model_validate(written)
    except ValidationError as exc:
        return validation_problems(exc, model, scope.loaded.source, scope.loc)
    return []
