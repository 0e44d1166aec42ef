"""Contracts at the step boundary: their order, every `on_failure` policy, retry with
the failure in the next prompt, and rework driven by a reviewer's feedback."""

from __future__ import annotations

import json

import pytest
from harness import Harness, Result, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

# `produce` counts its visits in `count` and writes {"items": [visit]} to out.json
PIPE = """
kind: WavePipeline
steps:
  - id: produce
    script: |
      n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
      echo '{{"items": ['"$n"']}}' > out.json
    output_artifacts: [{{name: result, path: out.json}}]
    {retry}
    handover:
      contracts:
{contracts}
  - id: fixer
    rework_only: true
    script: echo "fixing after $(cat count)" >> fixes.txt
  - id: after
    dependencies: [produce]
    script: echo after
"""


def contracts(h: Harness, *items: str, retry: str = "") -> None:
    h.pipeline(PIPE.format(contracts="\n".join(f"        - {c}" for c in items), retry=retry))


def steps_run(result: Result) -> list[str]:
    return [s for s, *_ in result.visits()]


def checked(result: Result) -> list[tuple[int, str]]:
    """(contract index, passed | policy) of each contract checked, in order."""
    return [
        (e.index, "passed" if isinstance(e, ev.ContractPassed) else e.policy)
        for e in result.events
        if isinstance(e, ev.ContractPassed | ev.ContractFailed)
    ]


def test_contracts_run_in_order_and_stop_at_the_first_failure(h: Harness) -> None:
    contracts(
        h,
        '{type: test_suite, command: "echo 1 >> order.txt"}',
        '{type: test_suite, command: "echo 2 >> order.txt"}',
        """{type: test_suite, command: "echo 3 >> order.txt; echo 'FAILED test_x' >&2; exit 1"}""",
        '{type: test_suite, command: "echo 4 >> order.txt"}',
        "{type: agent_review, reviewer: critic}",
    )
    result = h.run()
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith(
        "step 'produce' failed: contract 3 (test_suite) of step 'produce' failed:"
    )
    assert "FAILED test_x" in result.error
    assert (h.workspace(result.run_id) / "order.txt").read_text() == "1\n2\n3\n"
    assert checked(result) == [(0, "passed"), (1, "passed"), (2, "fail")]
    # the review never ran, nor did the step after
    assert not result.of(ev.ReviewStarted) and h.calls() == []
    assert steps_run(result) == ["produce"]


def test_continue_and_warn_record_and_go_on_skip_stops_checking(h: Harness) -> None:
    contracts(
        h,
        '{type: test_suite, command: "exit 1", on_failure: continue}',
        '{type: test_suite, command: "exit 2", on_failure: warn}',
        '{type: test_suite, command: "exit 3", on_failure: skip}',
        '{type: test_suite, command: "exit 4"}',
    )
    result = h.run()
    assert result.status == "succeeded"
    assert checked(result) == [(0, "continue"), (1, "warn"), (2, "skip")]  # the 4th never ran
    assert [e.error.splitlines()[0] for e in result.of(ev.ContractFailed)] == [
        "exit code 1",
        "exit code 2",
        "exit code 3",
    ]
    assert result.visits() == [("produce", 1, "success"), ("after", 1, "success")]


# one failing contract, then one that records that it ran; what each policy does
@pytest.mark.parametrize(
    ("policy", "status", "recorded", "second_ran", "steps"),
    [
        ("on_failure: fail", "failed", "fail", False, ["produce"]),
        ("must_pass: true", "failed", "fail", False, ["produce"]),
        ("on_failure: continue", "succeeded", "continue", True, ["produce", "after"]),
        ("on_failure: warn", "succeeded", "warn", True, ["produce", "after"]),
        ("must_pass: false", "succeeded", "warn", True, ["produce", "after"]),
        ("on_failure: skip", "succeeded", "skip", False, ["produce", "after"]),
        ("on_failure: retry", "failed", "retry", False, ["produce", "produce"]),
    ],
)
def test_every_policy_of_a_failed_contract(
    h: Harness, policy: str, status: str, recorded: str, second_ran: bool, steps: list[str]
) -> None:
    contracts(
        h,
        f"{{type: non_empty_file, source: missing.txt, {policy}}}",
        '{type: test_suite, command: "echo ran >> second.txt"}',
    )
    result = h.run()
    assert result.status == status
    assert [(e.index, e.policy) for e in result.of(ev.ContractFailed)] == [
        (0, recorded)
    ] * steps.count("produce")
    assert (h.workspace(result.run_id) / "second.txt").exists() == second_ran
    assert steps_run(result) == steps
    closed_once(result.events)


def test_retry_runs_the_step_again_until_the_contract_passes(h: Harness) -> None:
    contracts(
        h,
        """type: json_schema
          schema: {type: object, required: [items], properties: {items: {type: array, items: {minimum: 2}}}}
          on_failure: retry""",
        retry="retry: {max_attempts: 3}",
    )
    result = h.run()
    assert result.status == "succeeded"
    (retry,) = result.of(ev.RetryRequested)
    assert (retry.step_id, retry.visit, retry.attempt, retry.max_attempts) == ("produce", 1, 2, 3)
    (failed,) = result.of(ev.ContractFailed)
    assert "$.items[0]" in failed.error and failed.visit == 1
    assert retry.reason == failed.error
    assert result.visits() == [
        ("produce", 1, "failure"),
        ("produce", 2, "success"),
        ("after", 1, "success"),
    ]
    assert [(e.visit, e.index) for e in result.of(ev.ContractPassed)] == [(2, 0)]
    assert json.loads(result.artifact("produce", "result").read_text()) == {"items": [2]}


def test_a_retried_agent_gets_the_failure_at_the_top_of_its_prompt(h: Harness) -> None:
    h.replies(
        [
            {"step": "write", "text": "v1", "files": {"out.json": '{"items": [1]}'}},
            {"step": "write", "text": "v2", "files": {"out.json": '{"items": [2]}'}},
        ]
    )
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: write
            persona: dev
            exec: {type: prompt, source: "Write out.json for {{ input }}"}
            output_artifacts: [{name: result, path: out.json}]
            retry: {max_attempts: 3}
            handover:
              contract:
                type: json_schema
                schema: {type: object, properties: {items: {type: array, items: {minimum: 2}}}}
                on_failure: retry
        """
    )
    result = h.run(input_text="the ticket")
    assert result.status == "succeeded"
    first, second = (c["prompt"] for c in h.calls())
    assert first.startswith("Write out.json for the ticket")
    (failed,) = result.of(ev.ContractFailed)
    assert second.startswith(
        "RETRY CONTEXT (attempt 2 of 3)\n\n"
        f"Your previous attempt failed its checks:\n{failed.error}\n\n"
        "The end of your previous output:\n```\nv1\n```\n\n"
    )
    assert "do not start over.\n\nWrite out.json for the ticket" in second
    assert "$.items[0]" in failed.error
    assert [(v, o) for _, v, o in result.visits()] == [(1, "failure"), (2, "success")]


@pytest.mark.parametrize(
    ("retry", "attempts", "error"),
    [
        ("", 2, "step 'produce' still fails its contracts after 2 attempts"),  # the default
        (
            "retry: {max_attempts: 1}",
            1,
            "step 'produce' still fails its contracts after 1 attempts",
        ),
        (
            "retry: {max_attempts: 2}",
            2,
            "step 'produce' still fails its contracts after 2 attempts",
        ),
        # the same failure three times in a row: the breaker stops it first
        ("retry: {max_attempts: 5}", 3, "circuit breaker: step 'produce' failed 3 times in a row"),
    ],
)
def test_retry_gives_up_after_its_attempts(
    h: Harness, retry: str, attempts: int, error: str
) -> None:
    contracts(h, "{type: non_empty_file, source: missing.txt, on_failure: retry}", retry=retry)
    result = h.run()
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith(error)
    assert [v for _, v, _ in result.visits()] == list(range(1, attempts + 1))
    assert [e.attempt for e in result.of(ev.RetryRequested)] == list(range(2, attempts + 1))
    assert (h.workspace(result.run_id) / "count").read_text() == f"{attempts}\n"


REVIEWED = """
kind: WavePipeline
steps:
  - id: implement
    persona: dev
    exec: {type: prompt, source: "Implement: {{ input }}"}
    handover:
      contracts:
        - type: test_suite
          command: python3 -c "import greeting; assert greeting.greet('x') == 'hello x'"
          on_failure: retry
        - type: agent_review
          reviewer: critic
          criteria: ["No debugging output", "Every function has a docstring"]
          on_failure: rework
          rework_step: address-review
  - id: address-review
    persona: dev
    rework_only: true
    exec: {type: prompt, source: "Address the review for: {{ input }}"}
  - id: finish
    dependencies: [implement]
    script: python3 -c "import greeting; print(greeting.greet('world'))"
"""

REWORK = {
    "verdict": "rework",
    "issues": [
        {
            "severity": "critical",
            "file": "greeting.py",
            "line": 2,
            "detail": "debugging print left in library code",
        },
        {"severity": "major", "file": "greeting.py", "line": 1, "detail": "greet has no docstring"},
    ],
    "suggestions": ["remove the print", "say in a docstring what greet returns"],
    "confidence": 0.9,
    "summary": "Works, but leaves debug output and lacks a docstring.",
}
PASS = {"verdict": "pass", "issues": [], "suggestions": [], "confidence": 0.95, "summary": "Clean."}

REWORK_HEADER = """\
The implementation was reviewed by critic and needs rework.
Review verdict: rework
Issues:
- [critical] debugging print left in library code (greeting.py:2)
- [major] greet has no docstring (greeting.py:1)
Suggestions:
- remove the print
- say in a docstring what greet returns
Full review: .wave/artifacts/review-feedback.json

"""


def test_rework_gets_the_reviewers_feedback_then_the_contracts_run_again(h: Harness) -> None:
    h.replies(
        [
            {
                "step": "implement",
                "text": "Added greeting.py.",
                "files": {
                    "greeting.py": 'def greet(name):\n    print("debug", name)\n'
                    '    return f"hello {name}"\n'
                },
            },
            {"step": "implement.review", "text": json.dumps(REWORK)},
            {
                "step": "address-review",
                "text": "Removed the print, added a docstring.",
                "files": {
                    "greeting.py": 'def greet(name):\n    """Return a greeting."""\n'
                    '    return f"hello {name}"\n'
                },
            },
            {"step": "address-review.review", "text": json.dumps(PASS)},
        ]
    )
    h.pipeline(REVIEWED)
    result = h.run(input_text="add greet")
    assert result.status == "succeeded", result.error
    calls = h.calls()
    assert [c["step_id"] for c in calls] == [
        "implement",
        "implement.review",
        "address-review",
        "address-review.review",
    ]
    # the reviewer saw the change and the criteria, and was held to the schema
    review = calls[1]
    assert "greeting.py" in review["prompt"] and "No debugging output" in review["prompt"]
    assert review["json_schema"]["title"] == "ReviewFeedback"

    # the rework step got the feedback at the top of its prompt and as a file
    assert calls[2]["prompt"] == REWORK_HEADER + "Address the review for: add greet"
    ws = h.workspace(result.run_id)
    feedback = json.loads((ws / ".wave/artifacts/review-feedback.json").read_text())
    assert {k: feedback[k] for k in REWORK} == REWORK
    for wave_name in ("review_feedback.json", "review_feedback_implement.json"):  # Wave's
        assert json.loads((ws / ".agents/artifacts" / wave_name).read_text()) == feedback
    assert feedback["step"] == "implement" and feedback["reviewer"] == "critic"
    (rework,) = result.of(ev.ReworkRequested)
    assert (rework.step_id, rework.for_step, rework.for_visit, rework.reviewer) == (
        "address-review",
        "implement",
        1,
        "critic",
    )
    assert rework.feedback is not None and rework.feedback.model_dump() == REWORK
    assert rework.feedback_path == str(result.artifact("implement", "review-feedback"))

    # then implement's contracts were checked again, on the rework visit, and passed
    checks = [
        (e.step_id, e.index, type(e).__name__, e.for_step)
        for e in result.events
        if isinstance(e, ev.ContractPassed | ev.ContractFailed)
    ]
    assert checks == [
        ("implement", 0, "ContractPassed", None),
        ("implement", 1, "ContractFailed", None),
        ("address-review", 0, "ContractPassed", "implement"),
        ("address-review", 1, "ContractPassed", "implement"),
    ]
    reviews = [(e.step_id, e.verdict, e.for_step) for e in result.of(ev.ReviewCompleted)]
    assert reviews == [("implement", "rework", None), ("address-review", "pass", "implement")]
    # and the run went on as implement would have
    assert result.visits() == [
        ("implement", 1, "failure"),
        ("address-review", 1, "success"),
        ("finish", 1, "success"),
    ]
    assert result.of(ev.StepFinished)[-1].output_tail == "hello world\n"
    assert (ws / "greeting.py").read_text().splitlines()[1] == '    """Return a greeting."""'
    closed_once(result.events)


def test_a_command_rework_step_finds_a_mechanical_failure_in_its_environment(
    h: Harness,
) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: produce
            script: echo draft > report.md
            handover:
              contract:
                type: test_suite
                command: "grep -q final report.md || { echo 'report is not final' >&2; exit 1; }"
                on_failure: rework
                rework_step: finalize
          - id: finalize
            rework_only: true
            script: |
              cp "$SWELL_REVIEW_FEEDBACK" seen-feedback.json
              echo final > report.md
          - id: publish
            dependencies: [produce]
            script: cat report.md
        """
    )
    result = h.run()
    assert result.status == "succeeded", result.error
    seen = json.loads((h.workspace(result.run_id) / "seen-feedback.json").read_text())
    assert seen["step"] == "produce" and seen["contract"] == {"index": 0, "type": "test_suite"}
    assert "report is not final" in seen["error"] and seen["reviewer"] is None
    assert result.visits() == [
        ("produce", 1, "failure"),
        ("finalize", 1, "success"),
        ("publish", 1, "success"),
    ]
    assert result.of(ev.StepFinished)[-1].output_tail == "final\n"


def test_rework_that_never_fixes_it_is_stopped_by_the_breaker(h: Harness) -> None:
    contracts(
        h, "{type: non_empty_file, source: missing.txt, on_failure: rework, rework_step: fixer}"
    )
    result = h.run()
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith(
        "circuit breaker: step 'fixer' failed 3 times in a row with the same error"
    )
    assert steps_run(result) == ["produce", "fixer", "fixer", "fixer"]
    # each rework re-checked produce's contract, for produce's first visit
    assert [(e.step_id, e.for_step) for e in result.of(ev.ContractFailed)] == [
        ("produce", None),
        ("fixer", "produce"),
        ("fixer", "produce"),
        ("fixer", "produce"),
    ]
    assert {e.for_visit for e in result.of(ev.ReworkRequested)} == {1}
    assert (h.workspace(result.run_id) / "fixes.txt").read_text().splitlines() == [
        "fixing after 1"
    ] * 3


# ------------------------------------------------- retry.on_failure (after the last attempt)

FAILS_TWICE = "{type: non_empty_file, source: missing.txt}"


@pytest.mark.parametrize("after", ["skip", "warn"])
def test_skip_and_warn_go_on_past_the_step_with_a_warning(h: Harness, after: str) -> None:
    contracts(h, FAILS_TWICE, retry=f"retry: {{max_attempts: 2, on_failure: {after}}}")
    result = h.run()
    assert result.status == "succeeded"
    assert steps_run(result) == ["produce", "produce", "after"]
    (absorbed,) = result.of(ev.FailureAbsorbed)
    assert (absorbed.policy, absorbed.fails_run) == (after, False)
    assert any(
        f"retry.on_failure: {after}, the run goes on" in w.message for w in result.of(ev.Warning)
    )


def test_continue_goes_on_and_the_run_ends_failed(h: Harness) -> None:
    contracts(h, FAILS_TWICE, retry="retry: {max_attempts: 2, on_failure: continue}")
    result = h.run()
    assert steps_run(result) == ["produce", "produce", "after"]  # the run went on
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.startswith("step 'produce' still fails its contracts after 2 attempts")


def test_fail_is_the_default_and_ends_the_run_at_the_last_attempt(h: Harness) -> None:
    contracts(h, FAILS_TWICE, retry="retry: {max_attempts: 2, on_failure: fail}")
    result = h.run()
    assert result.status == "failed" and steps_run(result) == ["produce", "produce"]
    assert not result.of(ev.FailureAbsorbed)


def test_rework_after_the_last_attempt_runs_the_rework_step(h: Harness) -> None:
    contracts(
        h,
        "{type: non_empty_file, source: fixes.txt}",  # the fixer writes it
        retry="retry: {max_attempts: 2, on_failure: rework, rework_step: fixer}",
    )
    result = h.run()
    assert steps_run(result) == ["produce", "produce", "fixer", "after"]
    assert result.status == "succeeded"
    (rework,) = result.of(ev.ReworkRequested)
    assert (rework.step_id, rework.for_step) == ("fixer", "produce")


def test_a_resumed_run_still_ends_failed_after_continue(h: Harness) -> None:
    contracts(h, FAILS_TWICE, retry="retry: {max_attempts: 2, on_failure: continue}")
    crashed = h.run(crash_after=3)  # past the absorbed failure, before the run ends
    result = h.resume(crashed.run_id)
    assert result.status == "failed"


def test_rejected_ends_the_run_rejected_without_retries(h: Harness) -> None:
    contracts(
        h,
        "{type: non_empty_file, source: missing.txt, on_failure: rejected}",
        retry="retry: {max_attempts: 3}",
    )
    result = h.run()
    assert result.status == "rejected"
    assert steps_run(result) == ["produce"]  # no retry, and nothing after it
    assert not result.of(ev.RetryRequested)
    (finished,) = result.of(ev.RunFinished)
    assert finished.status == "rejected" and "missing.txt" in (finished.error or "")
