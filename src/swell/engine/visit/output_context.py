"""What a visit exposes to `output.context` expressions, and how those are evaluated."""

from __future__ import annotations

import json
from typing import Any

from swell.templates.expressions import ExpressionError, MissingVariable, evaluate, to_text
from swell.templates.render import parse_template

RESERVED = {"exit_code", "stdout", "stderr", "outcome", "json", "text"}


def output_namespace(
    stdout: str, stderr: str = "", exit_code: int | None = None, outcome: str = "success"
) -> dict[str, Any]:
    """`exit_code`, `stdout`, `stderr`, `outcome`, and when stdout is JSON, `json` and
    (for an object) its top-level fields by name."""
    text = stdout.strip()
    ns: dict[str, Any] = {
        "exit_code": exit_code,
        "stdout": text,
        "stderr": stderr.strip(),
        "outcome": outcome,
        "text": text,
    }
    if text[:1] in ("{", "["):  # not `in "{["`: that holds for "" too
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if data is not None:
            ns["json"] = data
            if isinstance(data, dict):
                for key, value in data.items():
                    if isinstance(key, str) and key not in RESERVED:
                        ns[key] = value
    return ns


def evaluate_context(spec: dict[str, Any], ns: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Evaluate `output.context`; returns values and problems (one per bad key).

    A value is a template (`"{{ exit_code == 0 }}"`, `"tests: {{ stdout }}"`) or a
    plain literal. A template that is a single placeholder keeps its value's type
    until it is turned into text (`true`/`false` for booleans).
    """
    values: dict[str, str] = {}
    problems: list[str] = []
    for key, raw in spec.items():
        if not isinstance(raw, str) or "{{" not in raw:
            values[key] = to_text(raw)
            continue
        try:
            tpl = parse_template(raw)
            parts = [tpl.literals[0]]
            for (_, node), literal in zip(tpl.placeholders, tpl.literals[1:], strict=True):
                parts.append(to_text(evaluate(node, ns)))
                parts.append(literal)
            text = "".join(parts)
            # "{{ x }}" on its own is the value; literal text around placeholders is kept
            values[key] = text.strip() if not "".join(tpl.literals).strip() else text
        except MissingVariable as exc:
            problems.append(f"output.context.{key}: '{exc.path}' is not in the step's output")
        except ExpressionError as exc:
            problems.append(f"output.context.{key}: {exc}")
    return values, problems
