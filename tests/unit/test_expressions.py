"""The `{{ ... }}` expression language and `output.context` evaluation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from swell.engine.visit.output_context import evaluate_context, output_namespace
from swell.templates.expressions import (
    ExpressionError,
    MissingVariable,
    evaluate,
    parse_expression,
    paths,
)


def ev(expr: str, ns: dict[str, Any]) -> Any:
    return evaluate(parse_expression(expr), ns)


def ctx(
    spec: dict[str, Any], stdout: str = "", exit_code: int | None = 0, **kw: Any
) -> dict[str, str]:
    values, problems = evaluate_context(spec, output_namespace(stdout, exit_code=exit_code, **kw))
    assert problems == []
    return values


# ------------------------------------------------------------------------ output.context


@pytest.mark.parametrize(
    "expr", ["{{ exit_code == 0 }}", "{{ .ExitCode == 0 }}", "{{.ExitCode==0}}"]
)
@pytest.mark.parametrize(("exit_code", "expected"), [(0, "true"), (1, "false"), (127, "false")])
def test_exit_code_checks_give_true_or_false(expr: str, exit_code: int, expected: str) -> None:
    assert ctx({"ok": expr}, exit_code=exit_code) == {"ok": expected}


def test_json_stdout_fields_are_variables() -> None:
    stdout = json.dumps({"verdict": "pass", "items": ["first", "second"], "score": 7})
    values = ctx(
        {
            "verdict": "{{ verdict }}",
            "first": "{{ json.items[0] }}",
            "last": "{{ json['items'][-1] }}",
            "score": "{{ score }}",
            "good": "{{ verdict == 'pass' && score >= 5 }}",
            "items": "{{ items }}",
        },
        stdout="  " + stdout + "\n",
    )
    assert values == {
        "verdict": "pass",
        "first": "first",
        "last": "second",
        "score": "7",
        "good": "true",
        "items": '["first", "second"]',
    }


def test_json_fields_never_shadow_the_step_result() -> None:
    stdout = json.dumps({"exit_code": 99, "outcome": "bogus", "stdout": "x"})
    ns = output_namespace(stdout, exit_code=0, outcome="success")
    assert ns["exit_code"] == 0 and ns["outcome"] == "success" and ns["stdout"] == stdout
    assert ns["json"]["exit_code"] == 99


def test_json_array_stdout() -> None:
    assert ctx({"n": "{{ json[2] }}", "has": "{{ json contains 2 }}"}, stdout="[1, 2, 3]") == {
        "n": "3",
        "has": "true",
    }


def test_plain_stdout_has_no_json() -> None:
    ns = output_namespace("not { json", stderr=" warn \n", exit_code=1, outcome="failure")
    assert "json" not in ns
    assert ns["stdout"] == ns["text"] == "not { json"
    assert ns["stderr"] == "warn"
    values, problems = evaluate_context(
        {"failed": "{{ outcome == 'failure' && exit_code != 0 }}", "j": "{{ json.x }}"}, ns
    )
    assert values == {"failed": "true"}
    assert problems == ["output.context.j: 'json.x' is not in the step's output"]


def test_broken_json_stdout_is_just_text() -> None:
    ns = output_namespace('{"verdict": ', exit_code=0)
    assert "json" not in ns and "verdict" not in ns


def test_literal_values_and_mixed_templates() -> None:
    values = ctx(
        {
            "phase": "review",
            "n": 3,
            "flag": True,
            "ratio": 0.5,
            "msg": "exit={{ exit_code }} out={{ stdout }}",
        },
        stdout="done\n",
    )
    assert values == {
        "phase": "review",
        "n": "3",
        "flag": "true",
        "ratio": "0.5",
        "msg": "exit=0 out=done",
    }


def test_context_problems_are_per_key() -> None:
    values, problems = evaluate_context(
        {"good": "{{ exit_code }}", "missing": "{{ nope }}", "broken": "{{ exit_code == }}"},
        output_namespace("", exit_code=2),
    )
    assert values == {"good": "2"}
    assert problems[0] == "output.context.missing: 'nope' is not in the step's output"
    assert problems[1].startswith("output.context.broken: in {{ exit_code == }}: ")


# --------------------------------------------------------------------------- operators


NS: dict[str, Any] = {
    "n": 10,
    "s": "10",
    "word": "abc",
    "flag": True,
    "off": "false",
    "items": ["a", "b"],
    "obj": {"k": "v", "0": "zero"},
    "nothing": None,
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # numbers compare as numbers, even when one side is text
        ("n > 9", True),
        ("s > 9", True),
        ("s == 10.0", True),
        ("'10' < '9'", False),
        ("n <= 10 && n >= 10", True),
        # text compares as text
        ("'abc' < 'abd'", True),
        ("word == 'abc'", True),
        ('word != "abc"', False),
        ("word > 'abb'", True),
        # mixed: a word never equals a number
        ("word == 0", False),
        ("word < 1", False),
        # booleans
        ("flag == true", True),
        ("flag && !off", True),
        ("not flag or word == 'abc'", True),
        ("!(flag && off)", True),
        ("off || nothing", False),
        ("flag and n > 100", False),
        ("!flag || !false", True),
        # contains
        ("items contains 'b'", True),
        ("items contains 'z'", False),
        ("word contains 'bc'", True),
        ("obj contains 'k'", True),
        # paths
        ("obj.k == 'v'", True),
        ("obj[0]", "zero"),
        ("obj['k']", "v"),
        ("items[1]", "b"),
        ("items[-1]", "b"),
        ("nothing == null", True),
        ("n", 10),
    ],
)
def test_operators(expr: str, expected: Any) -> None:
    assert ev(expr, NS) == expected


def test_and_binds_tighter_than_or() -> None:
    assert ev("true || false && false", {}) is True
    assert ev("(true || false) && false", {}) is False


def test_missing_paths_raise_missing_variable_with_the_path() -> None:
    for expr, path in [("ghost", "ghost"), ("obj.nope", "obj.nope"), ("items[5]", "items.5")]:
        with pytest.raises(MissingVariable) as info:
            ev(expr, NS)
        assert info.value.path == path


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("", "empty expression"),
        ("a ==", "ends too early"),
        ("a b", "unexpected 'b'"),
        ("(a", "expected ')'"),
        ("a ; rm", "unexpected character ';'"),
        ("a.", "expected a value"),
        ("a[b]", "expected an index"),
    ],
)
def test_syntax_errors(expr: str, reason: str) -> None:
    with pytest.raises(ExpressionError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_expression(expr)


def test_paths_lists_every_variable_read() -> None:
    node = parse_expression("steps.build.exit_code == 0 && (context.ok || .Input contains 'x')")
    assert paths(node) == [("steps", "build", "exit_code"), ("context", "ok"), ("input",)]
