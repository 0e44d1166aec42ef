"""`retry:` on the steps that do work, through the CLI: each attempt is a visit of its
own (`swell status`, `swell logs`) after its backoff, the run succeeds when an attempt
does, a run that fails every attempt says how many it had, `swell resume` after a
kill continues the count, and `swell validate` refuses retry settings that cannot act.
Retry's decisions (breaker, `on_failure`) are tested in process in
tests/engine/test_step_retries.py."""

from __future__ import annotations

import signal
from pathlib import Path

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline

# fails until its attempt `n`; counts its runs in the project (`tally`)
FLAKY = """
kind: WavePipeline
steps:
  - id: flaky
    script: |
      echo "run $SWELL_VISIT attempt $SWELL_ATTEMPT" >> {tally}
      n=$(grep -c . {tally})
      echo "try $n"
      [ "$n" -ge {succeeds_at} ] || exit 1
    retry: {{max_attempts: 3, backoff: fixed, base_delay: 10ms}}
  - id: after
    dependencies: [flaky]
    script: echo after the flaky one
"""


def flaky(project: Path, succeeds_at: int) -> Path:
    tally = project / "tally.txt"
    write_pipeline(project, "flaky", FLAKY.format(tally=tally, succeeds_at=succeeds_at))
    return tally


def visits(project: Path, run_id: str, step: str) -> list[tuple[int, str]]:
    steps = swell_json("status", run_id, cwd=project)["steps"]
    return [(v["visit"], v["outcome"]) for v in steps if v["step_id"] == step]


def test_a_command_step_that_succeeds_on_its_third_attempt_makes_the_run_succeed(
    project: Path,
) -> None:
    flaky(project, succeeds_at=3)
    result = swell("run", "flaky", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert visits(project, run_id, "flaky") == [(1, "failure"), (2, "failure"), (3, "success")]
    assert visits(project, run_id, "after") == [(1, "success")]
    logs = swell("logs", run_id, cwd=project).stdout
    assert "→ retry flaky (attempt 2 of 3) in 10ms" in logs
    assert "→ retry flaky (attempt 3 of 3) in 10ms" in logs
    retries = [e for e in events(project, run_id) if e["type"] == "retry.requested"]
    assert [(e["visit"], e["attempt"], e["delay_ms"]) for e in retries] == [(1, 2, 10), (2, 3, 10)]
    assert all(e["reason"].startswith("exit code 1") for e in retries)
    # the attempt waited its backoff before it ran (a lower bound: sleeps never end early)
    ended = {e["visit"]: e for e in events(project, run_id) if e["type"] == "step.finished"}
    assert all(_ms(ended[e["visit"] + 1]["ts"]) - _ms(e["ts"]) >= 9 for e in retries)


def _ms(stamp: str) -> int:
    """Milliseconds of an event's `ts` (2026-01-01T10:00:02.123Z) within its day."""
    clock = stamp[11:23]
    hours, minutes, seconds = clock.split(":")
    return round((int(hours) * 3600 + int(minutes) * 60 + float(seconds)) * 1000)


def test_a_command_step_that_fails_every_attempt_fails_the_run_naming_them(
    project: Path,
) -> None:
    tally = flaky(project, succeeds_at=99)
    result = swell("run", "flaky", cwd=project)
    assert result.returncode == 1
    assert "run failed" in result.stdout
    assert "step 'flaky' failed all 3 attempts; the last: exit code 1" in result.stdout
    run_id = run_id_of(result.stdout)
    status = swell_json("status", run_id, cwd=project)
    assert status["error"].startswith("step 'flaky' failed all 3 attempts")
    assert visits(project, run_id, "flaky") == [(1, "failure"), (2, "failure"), (3, "failure")]
    assert visits(project, run_id, "after") == []
    assert tally.read_text().splitlines() == [
        "run 1 attempt 1",
        "run 2 attempt 2",
        "run 3 attempt 3",
    ]


def test_resume_after_a_kill_mid_retry_continues_the_attempt_count(project: Path) -> None:
    """The second attempt is killed with swell; after `swell resume` it runs again as
    attempt 2, then attempt 3 is the last: four runs of the script, three attempts."""
    tally = project / "tally.txt"
    write_pipeline(
        project,
        "killed",
        f"""
kind: WavePipeline
steps:
  - id: flaky
    script: |
      echo "run $SWELL_VISIT attempt $SWELL_ATTEMPT" >> {tally}
      if [ "$SWELL_VISIT" = 2 ]; then sleep 60; fi
      exit 1
    retry: {{max_attempts: 3, base_delay: 10ms}}
""",
    )
    proc = start_swell("run", "killed", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: tally.is_file() and "run 2" in tally.read_text())
    proc.send_signal(signal.SIGKILL)  # swell dies; the sleeping script is left behind
    proc.communicate(timeout=30)

    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "step 'flaky' failed all 3 attempts" in resumed.stdout
    assert tally.read_text().splitlines() == [
        "run 1 attempt 1",
        "run 2 attempt 2",  # killed
        "run 3 attempt 2",
        "run 4 attempt 3",
    ]
    retries = [e for e in events(project, run_id) if e["type"] == "retry.requested"]
    assert [(e["visit"], e["attempt"]) for e in retries] == [(1, 2), (3, 3)]


def test_a_sub_pipeline_step_is_retried_with_a_new_child_run(project: Path) -> None:
    tally = project / "tally.txt"
    write_pipeline(
        project,
        "wobbly",
        f"""
kind: WavePipeline
steps:
  - id: work
    script: |
      echo x >> {tally}
      [ "$(grep -c . {tally})" -ge 2 ]
""",
    )
    write_pipeline(
        project,
        "outer",
        """
kind: WavePipeline
steps:
  - id: sub
    pipeline: wobbly
    retry: {max_attempts: 2, base_delay: 10ms}
""",
    )
    result = swell("run", "outer", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert visits(project, run_id, "sub") == [(1, "failure"), (2, "success")]
    children = swell_json("status", run_id, cwd=project)["children"]
    assert [swell_json("status", c, cwd=project)["status"] for c in children] == [
        "failed",
        "succeeded",
    ]


def test_each_iterate_item_is_retried_on_its_own(project: Path) -> None:
    """Item 1 fails its first attempt: only it runs again, as a new child run."""
    write_pipeline(
        project,
        "item",
        f"""
kind: WavePipeline
steps:
  - id: work
    script: |
      echo x >> {project}/tally-{{{{ input }}}}.txt
      [ "{{{{ input }}}}" = a ] || [ "$(grep -c . {project}/tally-{{{{ input }}}}.txt)" -ge 2 ]
""",
    )
    write_pipeline(
        project,
        "items",
        """
kind: WavePipeline
steps:
  - id: each
    pipeline: item
    input: "{{ item }}"
    iterate: {over: '["a", "b"]', mode: sequential}
    retry: {max_attempts: 2, backoff: fixed, base_delay: 10ms}
""",
    )
    result = swell("run", "items", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert visits(project, run_id, "each") == [(1, "success")]
    assert (project / "tally-a.txt").read_text() == "x\n"
    assert (project / "tally-b.txt").read_text() == "x\nx\n"
    assert "item 1 failed; retrying in 0.01s (attempt 2 of 2)" in result.stdout
    assert len(swell_json("status", run_id, cwd=project)["children"]) == 3


def test_validate_refuses_retry_settings_that_cannot_act(project: Path) -> None:
    path = write_pipeline(
        project,
        "bad-retry",
        """
kind: WavePipeline
steps:
  - id: build
    script: make
    retry: {max_attempts: 3, base_delay: banana, max_delay: 1m}
  - id: test
    dependencies: [build]
    script: make test
    retry: {max_attempts: 2, on_failure: rework}
  - id: lint
    dependencies: [build]
    script: make lint
    retry: {rework_step: fix}
  - id: fix
    rework_only: true
    script: make fix
  - id: ship
    dependencies: [test, lint]
    gate: {type: approval}
    retry: {max_attempts: 2}
""",
    )
    result = swell("validate", cwd=project)
    assert result.returncode == 1
    rel = path.relative_to(project)
    for problem in (
        f"{rel}:6:42: invalid duration 'banana'",
        f"{rel}:10:42: retry.on_failure: rework needs a `rework_step`",
        f"{rel}:14:26: retry.rework_step is only used with `on_failure: rework`",
        f"{rel}:21:5: `retry` has no effect on a gate step",
    ):
        assert problem in result.stdout + result.stderr, result.stdout + result.stderr
    assert "max_delay" not in result.stdout + result.stderr
