"""Loops and their limits: routing on outcomes and context, max_visits, max_step_visits,
the circuit breaker."""

from __future__ import annotations

from harness import Harness, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

LOOP = """
kind: WavePipeline
steps:
  - id: implement
    max_visits: {max_visits}
    script: echo "try {{{{ input }}}}" >> work.txt
  - id: run-tests
    dependencies: [implement]
    script: |
      n=$(grep -c . work.txt)
      [ "$n" -ge {passes_at} ] || {{ echo "FAIL test_case_$n" >&2; exit 1; }}
    output:
      context:
        passed: "{{{{ exit_code == 0 }}}}"
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - {{target: _complete, condition: context.passed=true}}
      - {{target: implement}}
"""


def loop(h: Harness, passes_at: int, max_visits: int = 10, extra: str = "") -> None:
    h.pipeline(extra + LOOP.format(passes_at=passes_at, max_visits=max_visits))


def test_loop_routes_back_until_the_tests_pass(h: Harness) -> None:
    loop(h, passes_at=3)
    result = h.run(input_text="greeting")
    assert result.status == "succeeded"
    assert result.visits("run-tests") == [
        ("run-tests", 1, "failure"),
        ("run-tests", 2, "failure"),
        ("run-tests", 3, "success"),
    ]
    assert result.state.context == {"passed": "true"}
    routes = [(e.step_id, e.target, e.condition) for e in result.of(ev.RouteTaken)]
    assert routes == [("check", "implement", None)] * 2 + [
        ("check", "_complete", "context.passed=true")
    ]
    # the router does no work: no round, no progress line
    assert all(e.role != "check" for e in result.of(ev.RoundRecorded))
    assert {e.progress for e in result.of(ev.StepStarted) if e.step_id == "check"} == {"hidden"}
    closed_once(result.events)


def test_max_visits_stops_a_loop_before_the_step_is_entered_again(h: Harness) -> None:
    loop(h, passes_at=99, max_visits=4)
    result = h.run()
    assert result.status == "failed"
    assert result.error == "step 'implement' reached its max_visits limit (4 of 4 visits)"
    assert [v for v, *_ in result.visits()].count("implement") == 4
    (limit,) = result.of(ev.LimitExceeded)
    assert (limit.step_id, limit.limit, limit.count, limit.maximum) == (
        "implement",
        "max_visits",
        4,
        4,
    )
    assert result.types()[-1] == "run.finished"


def test_max_step_visits_caps_the_whole_run(h: Harness) -> None:
    loop(h, passes_at=99, max_visits=100, extra="max_step_visits: 7\n")
    result = h.run()
    assert result.error == (
        "pipeline reached max_step_visits (7 of 7 visits in total) before entering step 'run-tests'"
    )
    assert len(result.visits()) == 7


FLAKY = """
kind: WavePipeline
steps:
  - id: implement
    script: echo change >> work.txt
  - id: run-tests
    dependencies: [implement]
    script: |
      n=$(grep -c . work.txt)
      {fail}
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - {{target: _complete, condition: outcome=success}}
      - {{target: implement}}
"""


def test_breaker_trips_on_the_same_normalized_error(h: Harness) -> None:
    # timestamps, temp paths, line numbers and hex ids differ on every visit
    fail = (
        'echo "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ) AssertionError in /tmp/tmp$$/t.py:$n:7 '
        "id=$(head -c8 /dev/urandom | od -An -tx1 | tr -d ' \\n')\" >&2; exit 1"
    )
    h.pipeline(FLAKY.format(fail=fail))
    result = h.run()
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith(
        "circuit breaker: step 'run-tests' failed 3 times in a row with the same error"
    )
    assert len(result.visits("run-tests")) == 3
    (tripped,) = result.of(ev.BreakerTripped)
    assert tripped.count == 3 and "<ts> assertionerror in <tmp>:<n>" in tripped.error_key


def test_breaker_counts_only_failures_in_a_row_with_the_same_error(h: Harness) -> None:
    # the error changes on the third visit, so the count starts again; passes on the fifth
    fail = '[ "$n" -ge 5 ] && exit 0; [ "$n" -eq 3 ] && echo other >&2 || echo same >&2; exit 1'
    h.pipeline(FLAKY.format(fail=fail))
    result = h.run()
    assert result.status == "succeeded"
    assert [o for *_, o in result.visits("run-tests")] == ["failure"] * 4 + ["success"]
    assert not result.of(ev.BreakerTripped)


def test_context_from_json_stdout_routes(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: review
            script: |
              echo '{"verdict": "rework", "score": 3, "items": ["a.py", "b.py"]}'
            output:
              context:
                verdict: "{{ verdict }}"
                first: "{{ json.items[0] }}"
                good: "{{ .ExitCode == 0 && score >= 3 }}"
            edges:
              - {target: ship, condition: "context.verdict=approve"}
              - {target: rework, condition: "context.verdict=rework && context.good=true"}
          - id: rework
            script: echo "reworking {{ context.first }}"
          - id: ship
            script: "true"
        """
    )
    result = h.run()
    assert result.status == "succeeded"
    assert result.state.context == {"verdict": "rework", "first": "a.py", "good": "true"}
    assert [s for s, *_ in result.visits()] == ["review", "rework"]
    assert result.of(ev.StepFinished)[-1].output_tail == "reworking a.py\n"


def test_a_failure_with_no_router_fails_the_run_and_optional_steps_do_not(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: lint
            optional: true
            script: exit 3
          - id: build
            dependencies: [lint]
            script: exit 2
          - id: deploy
            dependencies: [build]
            script: "true"
        """
    )
    result = h.run()
    assert result.visits() == [("lint", 1, "failure"), ("build", 1, "failure")]
    assert result.error is not None and result.error.startswith("step 'build' failed: exit code 2")
    # an optional failure never counts toward the breaker
    assert [e.error_key is None for e in result.of(ev.StepFinished)] == [True, False]


def test_an_agent_step_in_a_test_loop(h: Harness) -> None:
    h.replies(
        [
            {
                "step": "implement",
                "text": f"Attempt {n}.",
                "files": {"work.txt": "attempt\n" * n},
                "tool_calls": [{"name": "Write", "target": "work.txt"}],
                "usage": {"input_tokens": 900 + 300 * n, "output_tokens": 80 + n},
            }
            for n in (1, 2, 3)
        ]
    )
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: implement
            persona: dev
            exec:
              type: prompt
              source: "Task: {{ input }}. Last test result: {{ context.tests_pass }}"
            output_artifacts:
              - {name: summary, path: summary.md, source: stdout}
          - id: run-tests
            dependencies: [implement]
            script: '[ $(grep -c . work.txt) -ge 3 ]'
            output:
              context:
                tests_pass: "{{ exit_code == 0 }}"
          - id: check
            type: conditional
            dependencies: [run-tests]
            edges:
              - {target: _complete, condition: context.tests_pass=true}
              - {target: implement}
        """
    )
    result = h.run(input_text="make it pass")
    assert result.status == "succeeded"
    implement = [e for e in result.of(ev.StepFinished) if e.step_id == "implement"]
    assert [(e.tokens_in, e.tokens_out) for e in implement] == [(1200, 81), (1500, 82), (1800, 83)]
    # the n-th visit got the n-th reply, and was told how the tests went
    prompts = [c["prompt"] for c in h.calls()]
    assert prompts == [
        "Task: make it pass. Last test result: ",
        "Task: make it pass. Last test result: false",
        "Task: make it pass. Last test result: false",
    ]
    summaries = [e for e in result.of(ev.ArtifactWritten) if e.name == "summary"]
    assert [e.visit for e in summaries] == [1, 2, 3]
    assert result.artifact("implement", "summary").read_text() == "Attempt 3."
    assert [e.step_id for e in result.of(ev.AgentToolCall)] == ["implement"] * 3
    assert [e.input_tokens for e in result.of(ev.AgentUsage)] == [1200, 1500, 1800]
