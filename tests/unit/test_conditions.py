"""Edge conditions: `outcome=...`, `context.KEY=VALUE`, `!=`, `&&`, `||`, quotes."""

from __future__ import annotations

import pytest

from swell.manifest.conditions import ConditionError, parse_condition


def holds(condition: str | None, outcome: str = "success", **context: str) -> bool:
    return parse_condition(condition).holds(outcome, context)


@pytest.mark.parametrize(
    ("condition", "outcome", "expected"),
    [
        ("outcome=success", "success", True),
        ("outcome=success", "failure", False),
        ("outcome=failure", "failure", True),
        ("outcome=fail", "failure", True),  # Wave's spelling
        ("outcome=fail", "success", False),
        ("outcome == failure", "failure", True),
        ("outcome!=success", "failure", True),
        ("outcome != success", "success", False),
        ("  outcome=success  ", "success", True),
    ],
)
def test_outcome(condition: str, outcome: str, expected: bool) -> None:
    assert holds(condition, outcome) is expected


def test_context_equality_and_inequality() -> None:
    assert holds("context.tests_pass=true", tests_pass="true")
    assert not holds("context.tests_pass=true", tests_pass="false")
    assert not holds("context.tests_pass=true")  # unset never equals
    assert holds("context.tests_pass!=true")  # ... and always differs
    assert holds("context.tests_pass != true", tests_pass="false")
    assert holds("context.k = v", k="v")
    assert holds("context.url=http://x/?a=b", url="http://x/?a=b")
    assert holds("context.review.verdict=ok", **{"review.verdict": "ok"})


def test_values_compare_as_exact_text() -> None:
    assert not holds("context.n=1", n="1.0")
    assert not holds("context.v=True", v="true")
    assert holds("context.empty=", empty="")
    assert not holds("context.empty=")


def test_quoted_values() -> None:
    assert holds("context.msg='all good'", msg="all good")
    assert holds('context.msg="all good"', msg="all good")
    assert holds("context.msg = 'a && b || c'", msg="a && b || c")
    assert holds("context.op='||' && outcome=success", op="||")
    assert not holds("context.op='||' && outcome=success", "failure", op="||")
    # an apostrophe inside an unquoted value is just a character
    assert holds("context.msg=it's && outcome=success", msg="it's")


def test_and_binds_tighter_than_or() -> None:
    cond = "outcome=success && context.a=1 || context.b=1"
    assert holds(cond, "success", a="1")
    assert holds(cond, "failure", b="1")
    assert not holds(cond, "failure", a="1")
    assert not holds(cond, "success")


def test_empty_condition_always_holds() -> None:
    for cond in (None, "", "   "):
        assert holds(cond, "failure")


def test_context_keys_are_listed_for_lint() -> None:
    cond = parse_condition("context.a=1 && outcome=success || context.b!=2")
    assert cond.context_keys() == ["a", "b"]


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("garbage", "cannot read condition 'garbage': expected outcome=VALUE or context.KEY=VALUE"),
        ("exit_code == 0", "cannot read condition 'exit_code == 0'"),
        ("ctx.k=v", "cannot read condition 'ctx.k=v'"),
        ("context.=v", "cannot read condition 'context.=v'"),
        ("outcome=maybe", "outcome must be success or failure, not 'maybe'"),
        ("outcome=Success", "outcome must be success or failure, not 'Success'"),
        ("outcome=success &&", "condition 'outcome=success &&' has an empty part around && or ||"),
        ("|| outcome=success", "has an empty part around && or ||"),
        ("outcome=success && && context.a=1", "has an empty part"),
    ],
)
def test_garbage_is_explained(condition: str, message: str) -> None:
    with pytest.raises(ConditionError) as info:
        parse_condition(condition)
    assert message in str(info.value)
