"""`retry:` on a step's own failure (a command's exit code, a sub-pipeline that
failed), in process: the backoff each attempt waits, `retry.on_failure` after the last
attempt, the circuit breaker beside the attempts, a loop's next visit starting its
count again, and a resumed run continuing it. Contract-driven retries are in
test_contract_policies.py; the CLI's view of them in tests/integration/test_retries.py."""

from __future__ import annotations

import pytest
from harness import Harness, Result, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

# `work` fails until it has run `{until}` times, saying which run it is ("FAIL run_N",
# so no two failures look alike to the breaker), or always the same way (`same`)
PIPE = """
kind: WavePipeline
steps:
  - id: work
    script: |
      n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
      {fail}
    retry: {retry}
  - id: fixer
    rework_only: true
    script: echo fixed > fixed.txt
  - id: after
    dependencies: [work]
    script: echo after
"""
COUNTED = 'if [ "$n" -lt {until} ]; then echo "FAIL run_$n"; exit 1; fi'
SAME = "echo 'FAIL the same way'; exit 1"


def work(h: Harness, retry: str, until: int = 99, fail: str = COUNTED) -> None:
    h.pipeline(PIPE.format(retry=retry, fail=fail.format(until=until)))


def steps_run(result: Result) -> list[str]:
    return [s for s, *_ in result.visits()]


@pytest.mark.parametrize(
    ("retry", "delays"),
    [
        ("{max_attempts: 4, backoff: fixed, base_delay: 10ms}", [10, 10, 10]),
        ("{max_attempts: 4, backoff: linear, base_delay: 10ms}", [20, 30, 40]),  # Wave's base·k
        ("{max_attempts: 4, backoff: exponential, base_delay: 10ms}", [20, 40, 80]),
        ("{max_attempts: 4, backoff: exponential, base_delay: 10ms, max_delay: 50ms}", [20, 40, 50]),
        ("{policy: aggressive, base_delay: 1ms}", [2, 4, 8, 16]),  # 5 attempts
    ],
)  # fmt: skip
def test_each_attempt_is_a_visit_after_its_backoff(
    h: Harness, retry: str, delays: list[int]
) -> None:
    work(h, retry)
    result = h.run()
    assert result.status == "failed"
    requested = result.of(ev.RetryRequested)
    assert [e.delay_ms for e in requested] == delays
    assert [(e.visit, e.attempt) for e in requested] == [
        (n, n + 1) for n in range(1, len(delays) + 1)
    ]
    assert [v for _, v, _ in result.visits("work")] == list(range(1, len(delays) + 2))
    assert requested[0].reason.startswith("exit code 1\nFAIL run_1")
    closed_once(result.events)


def test_runtime_retry_max_delay_caps_a_step_that_sets_none(h: Harness) -> None:
    h.manifest("kind: WaveManifest\nruntime:\n  timeouts:\n    retry_max_delay_seconds: 0.005\n")
    work(h, "{max_attempts: 2}")  # Wave's default backoff: linear from 1s, 2s before attempt 2
    (requested,) = h.run().of(ev.RetryRequested)
    assert requested.delay_ms == 5


def test_the_run_goes_on_once_an_attempt_succeeds(h: Harness) -> None:
    work(h, "{max_attempts: 3, base_delay: 0}", until=3)
    result = h.run()
    assert result.status == "succeeded"
    assert result.visits() == [
        ("work", 1, "failure"),
        ("work", 2, "failure"),
        ("work", 3, "success"),
        ("after", 1, "success"),
    ]


@pytest.mark.parametrize("after", ["skip", "warn", "continue"])
def test_on_failure_lets_the_run_go_on_past_the_last_attempt(h: Harness, after: str) -> None:
    work(h, f"{{max_attempts: 2, base_delay: 0, on_failure: {after}}}")
    result = h.run()
    assert steps_run(result) == ["work", "work", "after"]
    assert result.status == ("failed" if after == "continue" else "succeeded")
    (absorbed,) = result.of(ev.FailureAbsorbed)
    assert absorbed.error.startswith("step 'work' failed all 2 attempts; the last: exit code 1")
    assert any(f"retry.on_failure: {after}" in w.message for w in result.of(ev.Warning))


def test_on_failure_rework_runs_the_rework_step_and_goes_on(h: Harness) -> None:
    work(h, "{max_attempts: 2, base_delay: 0, on_failure: rework, rework_step: fixer}")
    result = h.run()
    assert result.status == "succeeded"
    assert steps_run(result) == ["work", "work", "fixer", "after"]
    (rework,) = result.of(ev.ReworkRequested)
    assert (rework.step_id, rework.for_step, rework.for_visit) == ("fixer", "work", 2)
    assert rework.reason.startswith("exit code 1\nFAIL run_2")


def test_the_same_failure_again_and_again_trips_the_breaker_before_the_attempts_run_out(
    h: Harness,
) -> None:
    work(h, "{max_attempts: 5, base_delay: 0}", fail=SAME)
    result = h.run()
    assert result.error is not None
    assert result.error.startswith("circuit breaker: step 'work' failed 3 times in a row")
    assert len(result.visits("work")) == 3


def test_on_the_last_attempt_the_failure_is_the_attempts_not_the_breakers(h: Harness) -> None:
    work(h, "{max_attempts: 3, base_delay: 0}", fail=SAME)
    result = h.run()
    assert result.error is not None
    assert result.error.startswith("step 'work' failed all 3 attempts; the last: exit code 1")
    assert not result.of(ev.BreakerTripped)


LOOP = """
kind: WavePipeline
steps:
  - id: implement
    script: echo work >> log.txt
  - id: test
    dependencies: [implement]
    script: |
      t=$(cat tries 2>/dev/null || echo 0); t=$((t+1)); echo $t > tries
      [ "$t" -ge 4 ] || { echo "FAIL try_$t"; exit 1; }
    retry: {max_attempts: 2, base_delay: 0}
    edges:
      - {target: _complete, condition: outcome=success}
      - {target: implement}
"""


def test_a_loops_next_visit_starts_its_attempts_again(h: Harness) -> None:
    """`test` fails its two attempts, the edge loops back through `implement`, and its
    next visit has two attempts again (the count is per visit the graph makes)."""
    h.pipeline(LOOP)
    result = h.run()
    assert result.status == "succeeded", result.error
    assert result.visits("test") == [
        ("test", 1, "failure"),
        ("test", 2, "failure"),
        ("test", 3, "failure"),
        ("test", 4, "success"),
    ]
    assert [(e.visit, e.attempt) for e in result.of(ev.RetryRequested)] == [(1, 2), (3, 2)]
    assert [v for _, v, _ in result.visits("implement")] == [1, 2]


def test_a_resumed_run_continues_the_attempt_count(h: Harness) -> None:
    work(h, "{max_attempts: 3, base_delay: 0}")
    # the first attempt's end, the retry it asks for and attempt 2's start are stored;
    # the process dies before attempt 2's end is
    crashed = h.run(crash_after=3)
    assert crashed.crashed and [e.attempt for e in crashed.of(ev.RetryRequested)] == [2]
    result = h.resume(crashed.run_id)
    assert result.status == "failed"
    assert result.error is not None and "failed all 3 attempts" in result.error
    assert [e.attempt for e in result.of(ev.RetryRequested)] == [2, 3]
    assert (h.workspace(result.run_id) / "count").read_text() == "4\n"  # 3 attempts, 1 lost


def test_a_sub_pipeline_step_is_tried_again(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: inner
            script: |
              n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
              [ "$n" -ge 2 ]
        """,
        name="child",
    )
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: sub
            pipeline: child
            retry: {max_attempts: 2, base_delay: 0}
        """
    )
    result = h.run()
    assert result.status == "succeeded"
    assert result.visits("sub") == [("sub", 1, "failure"), ("sub", 2, "success")]
    assert len(result.of(ev.ChildRunStarted)) == 2
