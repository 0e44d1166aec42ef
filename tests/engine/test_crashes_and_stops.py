"""Crashes and stops: a crash at every batch boundary then resume, crashing again and
again, concurrency limits, fail-fast across branches, `swell cancel` and Ctrl-C."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from pathlib import Path

import pytest
from harness import Harness, Result, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev
from swell.process import marked_groups

# A loop whose count lives in the run's context (`n`), so it ends after the same
# visits however often it is interrupted; `work.txt` shows what each visit did.
# `lint` runs alongside it.
LOOP = """
kind: WavePipeline
steps:
  - id: implement
    script: |
      echo attempt >> work.txt
      prev={{ context.n }}
      echo "{\\"n\\": $(( ${prev:-0} + 1 ))}"
    output:
      context:
        n: "{{ n }}"
  - id: lint
    script: echo lint >> lint.txt
  - id: run-tests
    dependencies: [implement]
    script: |
      n={{ context.n }}
      [ "$n" -ge 4 ] || { echo "FAIL test_case_$n" >&2; exit 1; }
    output:
      context:
        passed: "{{ exit_code == 0 }}"
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - {target: _complete, condition: "context.passed=true"}
      - {target: implement}
"""

FINAL = {
    "status": "succeeded",
    "visits": {"implement": 4, "lint": 1, "run-tests": 4, "check": 4},
    "context": {"n": "4", "passed": "true"},
}


def outcome(result: Result) -> dict[str, object]:
    """What a user sees of a finished run: its status, visits per step, its context."""
    return {
        "status": result.status,
        "visits": dict(result.state.counted),
        "context": result.state.context,
    }


def looping(root: Path) -> Harness:
    h = Harness(root)
    h.pipeline(LOOP)
    return h


def test_the_loop_uncrashed(h: Harness) -> None:
    h.pipeline(LOOP)
    result = h.run()
    assert outcome(result) == FINAL
    assert (h.workspace(result.run_id) / "work.txt").read_text() == "attempt\n" * 4


def test_a_crash_at_every_batch_boundary_then_resume_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    interrupted_somewhere = 0
    for crash_after in itertools.count(1):
        h = looping(tmp_path / f"crash-{crash_after}")
        crashed = h.run(crash_after=crash_after)
        if not crashed.crashed:
            # the whole run fitted in `crash_after` batches: every boundary was tried.
            # A batch a command visit at least (9; lint's may share implement's), the
            # routers' events going out with the next visit's start
            assert crash_after > 8
            assert outcome(crashed) == FINAL
            break
        run_id = crashed.run_id
        stored = list(h.sink.of(run_id))
        assert len(stored) >= 1 and not any(isinstance(e, ev.RunFinished) for e in stored)

        resumed = h.resume(run_id)
        events = resumed.events
        where = f"crash after batch {crash_after}"
        assert events[: len(stored)] == stored, where  # nothing stored was lost or rewritten
        assert [e.seq for e in events] == list(range(1, len(events) + 1)), where
        closed_once(events)
        assert outcome(resumed) == FINAL, where
        assert len(resumed.of(ev.RunResumed)) == 1 and len(resumed.of(ev.RunStarted)) == 1
        assert resumed.types().count("run.finished") == 1
        # a visit left open by the crash is interrupted and runs again as a new visit
        interrupted = resumed.of(ev.StepInterrupted)
        assert {e.reason.split(";")[0] for e in interrupted} <= {
            "the process running this visit ended"
        }
        assert [e.step_id for e in interrupted] == resumed.of(ev.RunResumed)[0].interrupted_steps
        interrupted_somewhere += len(interrupted)
        # at least once: the interrupted visit may have done its work before the crash
        lines = (h.workspace(run_id) / "work.txt").read_text().splitlines()
        again = sum(1 for e in interrupted if e.step_id == "implement")
        assert 4 <= len(lines) <= 4 + again, where
    assert interrupted_somewhere >= 5


def test_a_run_that_crashes_again_and_again_still_finishes_the_same(h: Harness) -> None:
    h.pipeline(LOOP)
    # each resume stores three batches, then dies: enough to finish one visit
    result = h.run(crash_after=3)
    crashes = 0
    while result.crashed:
        crashes += 1
        assert crashes < 100, "no progress between crashes"
        result = h.resume(result.run_id, crash_after=3)
    assert crashes > 3
    assert outcome(result) == FINAL
    assert len(result.of(ev.RunResumed)) == crashes
    closed_once(result.events)
    assert [e.seq for e in result.events] == list(range(1, len(result.events) + 1))


# ------------------------------------------------------------------- concurrency

# each step stamps its start (once the file exists it holds the time) and its end
STAMPED = """
kind: WavePipeline
steps:
  - id: a
    script: date +%s.%N > a.t; mv a.t a.start; {work}; date +%s.%N > a.end
  - id: b
    script: date +%s.%N > b.t; mv b.t b.start; {work}; date +%s.%N > b.end
  - id: c
    script: date +%s.%N > c.t; mv c.t c.start; {work}; date +%s.%N > c.end
  - id: join
    dependencies: [a, b, c]
    script: test -f a.end && test -f b.end && test -f c.end
"""

# each step waits (up to 20 s) until all three have started: with room for all three
# they overlap however loaded the machine is
WAIT_FOR_SIBLINGS = (
    "i=0; until [ -f a.start ] && [ -f b.start ] && [ -f c.start ] || [ $i -ge 2000 ]; "
    "do sleep 0.01; i=$((i+1)); done"
)


def concurrency(h: Harness, limit: int, work: str) -> Result:
    h.manifest(
        h.root.joinpath("wave.yaml")
        .read_text()
        .replace("max_concurrency: 4", f"max_concurrency: {limit}")
    )
    h.pipeline(STAMPED.format(work=work))
    result = h.run()
    assert result.status == "succeeded", result.error
    return result


def intervals(h: Harness, result: Result) -> list[tuple[float, float]]:
    ws = h.workspace(result.run_id)
    return [
        (float((ws / f"{s}.start").read_text()), float((ws / f"{s}.end").read_text()))
        for s in "abc"
    ]


def most_open(events: list[ev.BaseEvent]) -> int:
    """The most visits that were open at once."""
    open_: set[tuple[str | None, int | None]] = set()
    most = 0
    for e in events:
        if isinstance(e, ev.StepStarted):
            open_.add((e.step_id, e.visit))
            most = max(most, len(open_))
        elif isinstance(e, ev.StepFinished | ev.StepInterrupted):
            open_.discard((e.step_id, e.visit))
    return most


def test_independent_steps_run_at_the_same_time(h: Harness) -> None:
    result = concurrency(h, 4, WAIT_FOR_SIBLINGS)
    (a, b, c) = intervals(h, result)
    for (s1, e1), (s2, e2) in itertools.combinations((a, b, c), 2):
        assert s1 < e2 and s2 < e1  # they overlapped
    assert most_open(result.events) == 3
    assert [e.step_id for e in result.of(ev.StepStarted)][:3] == ["a", "b", "c"]
    assert result.types().index("step.finished") > result.types().index("step.started") + 2


@pytest.mark.parametrize("limit", [1, 2])
def test_max_concurrency_caps_the_steps_running_at_once(h: Harness, limit: int) -> None:
    result = concurrency(h, limit, "sleep 0.1")
    assert most_open(result.events) == limit
    spans = intervals(h, result)
    if limit == 1:
        ordered = sorted(spans)
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(ordered))
    else:
        # never all three at once (for intervals: no point common to all three)
        assert max(s for s, _ in spans) >= min(e for _, e in spans)
    assert [s for s, *_ in result.visits()][-1] == "join"


def no_processes_left(run_id: str, timeout: float = 10) -> bool:
    """No process of the run is left, once the signals sent to them have landed."""
    deadline = time.monotonic() + timeout
    while marked_groups([f"SWELL_RUN_ID={run_id}"]):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_failure_in_one_branch_stops_the_others_at_once(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: slow
            script: touch slow.started; sleep 60
          - id: broken
            script: |
              i=0; until [ -f slow.started ] || [ $i -ge 2000 ]; do sleep 0.01; i=$((i+1)); done
              echo "broke" >&2; exit 1
          - id: after
            dependencies: [slow, broken]
            script: "true"
        """
    )
    started = time.monotonic()
    result = h.run()
    assert time.monotonic() - started < 20  # not the 60 s of `slow`
    assert result.status == "failed"
    assert result.error == "step 'broken' failed: exit code 1\nbroke"
    assert result.visits() == [("broken", 1, "failure")]
    (interrupted,) = result.of(ev.StepInterrupted)
    assert (interrupted.step_id, interrupted.visit, interrupted.reason) == (
        "slow",
        1,
        "run failed while this visit ran",
    )
    closed_once(result.events)
    assert result.types()[-1] == "run.finished"
    assert no_processes_left(result.run_id)


# ---------------------------------------------------------------------- stopping

RUNNING = """
kind: WavePipeline
steps:
  - id: first
    script: echo one >> log.txt
  - id: second
    dependencies: [first]
    script: |
      echo two >> log.txt
      [ -f go-on ] && exit 0
      touch second.running; sleep 60
  - id: sibling
    dependencies: [first]
    script: |
      [ -f go-on ] && exit 0
      touch sibling.running; sleep 60
"""

WAITING = """
kind: WavePipeline
steps:
  - id: first
    script: echo one >> log.txt
  - id: approve
    dependencies: [first]
    gate: {type: approval, message: "go on?"}
"""


def test_cancel_stops_the_running_visits_and_ends_the_run_for_good(h: Harness) -> None:
    h.pipeline(RUNNING)
    ws = h.root / ".swell" / "workspaces"
    h.control.cancel_when = lambda run_id: (
        (ws / run_id / "second.running").exists() and (ws / run_id / "sibling.running").exists()
    )
    started = time.monotonic()
    result = h.run()
    assert time.monotonic() - started < 20
    assert result.status == "cancelled" and result.state.status == "cancelled"
    (finished,) = result.of(ev.RunFinished)
    assert (finished.status, finished.error) == ("cancelled", "cancelled")
    interrupted = sorted((e.step_id, e.visit, e.reason) for e in result.of(ev.StepInterrupted))
    assert interrupted == [("second", 1, "run cancelled"), ("sibling", 1, "run cancelled")]
    # nothing is queued for a resume: a cancelled run is over
    assert result.state.queue == [] and result.state.open == {}
    assert result.visits() == [("first", 1, "success")]
    closed_once(result.events)
    assert no_processes_left(result.run_id)


def test_cancel_ends_a_run_waiting_at_a_gate(h: Harness) -> None:
    h.pipeline(WAITING)
    h.control.cancel_when = lambda run_id: any(
        isinstance(e, ev.GateWaiting) for e in h.sink.of(run_id)
    )
    result = h.run()
    assert result.status == "cancelled" and result.state.status == "cancelled"
    assert [(e.step_id, e.reason) for e in result.of(ev.StepInterrupted)] == [
        ("approve", "run cancelled")
    ]
    assert not result.of(ev.GateResolved)
    closed_once(result.events)


def test_ctrl_c_interrupts_the_running_visits_and_resume_runs_them_again(h: Harness) -> None:
    h.pipeline(RUNNING)
    ws = h.root / ".swell" / "workspaces"

    def ctrl_c_once_both_run(run_id: str) -> bool:
        if (ws / run_id / "second.running").exists() and (ws / run_id / "sibling.running").exists():
            h.interrupt(run_id)
        return False  # never a cancel

    h.control.cancel_when = ctrl_c_once_both_run
    stopped = h.run()
    assert stopped.status == "interrupted" and stopped.state.status == "interrupted"
    assert sorted(e.step_id or "" for e in stopped.of(ev.StepInterrupted)) == ["second", "sibling"]
    # both are queued again for `swell resume`
    assert sorted(a.step_id for a in stopped.state.queue) == ["second", "sibling"]
    assert no_processes_left(stopped.run_id)

    (ws / stopped.run_id / "go-on").write_text("")
    h.control.cancel_when = lambda run_id: False
    resumed = h.resume(stopped.run_id)
    assert resumed.status == "succeeded"
    # Ctrl-C already closed the visits: resume interrupts nothing and runs them again
    assert [e.interrupted_steps for e in resumed.of(ev.RunResumed)] == [[]]
    assert sorted((s, v) for s, v, _ in resumed.visits()) == [
        ("first", 1),
        ("second", 2),
        ("sibling", 2),
    ]
    assert (ws / stopped.run_id / "log.txt").read_text() == "one\ntwo\ntwo\n"
    closed_once(resumed.events)
    assert Counter(type(e).__name__ for e in resumed.events)["RunFinished"] == 2
