"""The circuit breaker sees progress: a failure whose counts move is not the same
failure (docs/engine.md, "Limits"); the same failure three times in a row still trips."""

from __future__ import annotations

from harness import Harness, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

CONVERGING = """
kind: WavePipeline
steps:
  - id: implement
    script: echo fix >> work.txt
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

# like pytest's summary: one failing test fewer on every attempt, passing on the fourth
FEWER = (
    'left=$((4 - n)); [ "$left" -le 0 ] && exit 0; '
    'echo "===== $left failed, $((10 - left)) passed in 0.$n$$s =====" >&2; exit 1'
)
# always the same count, with incidental differences (pid, duration)
SAME = 'echo "===== 3 failed, 7 passed in 0.$$s =====" >&2; exit 1'
# a different failing test on every attempt, passing on the fifth
OTHER = (
    '[ "$n" -ge 5 ] && exit 0; echo "FAILED tests/t.py::test_case[$n] - assert False" >&2; exit 1'
)


def test_a_converging_loop_is_not_stopped_by_the_breaker(h: Harness) -> None:
    h.pipeline(CONVERGING.format(fail=FEWER))
    result = h.run()
    assert result.status == "succeeded", result.error
    assert [o for *_, o in result.visits("run-tests")] == ["failure"] * 3 + ["success"]
    assert not result.of(ev.BreakerTripped)
    keys = [e.error_key for e in result.of(ev.StepFinished) if e.step_id == "run-tests"]
    assert [k.splitlines()[-1] for k in keys if k] == [
        "===== 3 failed, <n> passed in <dur> =====",
        "===== 2 failed, <n> passed in <dur> =====",
        "===== 1 failed, <n> passed in <dur> =====",
    ]
    closed_once(result.events)


def test_the_same_failure_count_three_times_trips_the_breaker(h: Harness) -> None:
    h.pipeline(CONVERGING.format(fail=SAME))
    result = h.run()
    assert result.status == "failed"
    assert result.error is not None and result.error.startswith(
        "circuit breaker: step 'run-tests' failed 3 times in a row with the same error"
    )
    assert len(result.visits("run-tests")) == 3
    (tripped,) = result.of(ev.BreakerTripped)
    assert tripped.error_key.endswith("===== 3 failed, <n> passed in <dur> =====")


def test_a_different_failing_test_each_time_is_progress(h: Harness) -> None:
    h.pipeline(CONVERGING.format(fail=OTHER))
    result = h.run()
    assert result.status == "succeeded", result.error
    assert len(result.visits("run-tests")) == 5
    assert not result.of(ev.BreakerTripped)


def test_progress_then_stuck_trips_after_three_identical_failures(h: Harness) -> None:
    # 3 failing, then 2, then 2 again and again: the count starts again at the change
    stuck = 'left=$((n < 2 ? 3 : 2)); echo "$left tests failed" >&2; exit 1'
    h.pipeline(CONVERGING.format(fail=stuck))
    result = h.run()
    assert result.status == "failed"
    assert [e.count for e in result.of(ev.BreakerTripped)] == [3]
    # visits: 3 failed (1), 2 failed (1, 2, 3) -> tripped at the fourth visit
    assert len(result.visits("run-tests")) == 4
    # a resumed run rebuilds the same counts from the stored events
    assert result.state.breaker == {"run-tests": ("exit code <n>\n2 tests failed", 3)}
