"""`swell run` options: --dry-run, --from-step [--run], --detach, --timeout, -o quiet, -v."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import (
    events,
    process_gone,
    run_id_of,
    swell,
    swell_cmd,
    swell_json,
    wait_for,
    write_pipeline,
)

SLOW = """
kind: WavePipeline
steps:
  - id: first
    script: echo first > first.txt
  - id: wait
    dependencies: [first]
    script: |
      echo "$SWELL_RUN_ID slow-marker-{tag}" > started.txt
      sleep {seconds}
"""

CHAIN = """
kind: WavePipeline
input: {source: cli}
steps:
  - id: make
    script: |
      echo "made for {{ input }}" > made.txt
      echo '{"version": 7}'
    output:
      context:
        version: "{{ json.version }}"
    output_artifacts:
      - {name: made, path: made.txt}
  - id: use
    dependencies: [make]
    memory:
      inject_artifacts:
        - {step: make, artifact: made, as: made.txt}
    script: |
      cat .swell-inputs/made.txt 2>/dev/null || cat made.txt
      echo "version {{ context.version }} after {{ steps.make.outcome }}"
      [ -f broken ] && exit 1 || true
  - id: last
    dependencies: [use]
    script: echo last
"""


def runs(project: Path) -> list[dict[str, object]]:
    return list(swell_json("list", cwd=project))


# ------------------------------------------------------------------------- dry run


def test_dry_run_prints_the_plan_and_records_nothing(project: Path) -> None:
    result = swell("run", "hello", "--dry-run", "--input", "add a greeting", cwd=project)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("plan for pipeline hello (dry run: nothing runs, no run is recorded)")
    assert "input     'add a greeting'" in out
    assert "entry     plan" in out
    assert "persona planner → adapter local, model adapter default" in out
    assert "implement  command  after plan" in out
    assert "→ _complete if context.tests_pass=true" in out
    assert "checks    ok" in out
    assert runs(project) == []


def test_dry_run_json_resolves_adapters_and_models(project: Path) -> None:
    result = swell("run", "impl-issue", "--dry-run", "--model", "big", "-o", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["pipeline"] == "impl-issue" and plan["entry"] == ["plan"]
    implement = next(s for s in plan["steps"] if s["id"] == "implement")
    roles = {(a["role"], a["persona"], a["adapter"], a["adapter_type"], a["model"])
             for a in implement["agents"]}  # fmt: skip
    assert roles == {
        ("step", "developer", "replay", "scripted", "big"),
        ("review", "reviewer", "replay", "scripted", None),
    }
    assert implement["contracts"] == ["test_suite", "agent_review"]
    assert plan["problems"] == []
    assert runs(project) == []


def test_dry_run_with_problems_lists_them_and_exits_1(project: Path) -> None:
    result = swell("run", "loop", "--dry-run", "--adapter", "nope", cwd=project)
    assert result.returncode == 1
    assert "1 problem(s) would stop this run" in result.stdout
    assert "unknown adapter 'nope'" in result.stdout
    assert runs(project) == []


# ----------------------------------------------------------------------- from step


def test_from_step_reuses_the_previous_run_s_steps(project: Path) -> None:
    write_pipeline(project, "chain", CHAIN)
    first = swell("run", "chain", "--input", "v1", cwd=project)
    assert first.returncode == 0, first.stderr
    previous = run_id_of(first.stdout)
    result = swell("run", "chain", "--from-step", "use", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert run_id != previous
    assert f"starting at step use; reusing make from run {previous}" in result.stdout
    assert "resumed" not in result.stdout
    status = swell_json("status", run_id, cwd=project)
    assert status["input"] == "v1"  # the previous run's input by default
    assert status["context"] == {"version": "7"}
    visits = [(v["step_id"], v["visit"], v["status"]) for v in status["steps"]]
    assert visits == [("make", 1, "succeeded"), ("use", 1, "succeeded"), ("last", 1, "succeeded")]
    log = events(project, run_id)
    make_started = next(e for e in log if e["type"] == "step.started" and e["step_id"] == "make")
    assert make_started["detail"].startswith(f"reused from run {previous}")
    use_out = next(e for e in log if e["type"] == "step.finished" and e["step_id"] == "use")[
        "output_tail"
    ]
    assert "made for v1" in use_out and "version 7 after success" in use_out
    # the artifact was reused from the new run's own copy of the workspace
    (made,) = [a for a in swell_json("artifacts", run_id, cwd=project) if a["name"] == "made"]
    assert run_id in made["path"] and Path(made["path"]).read_text() == "made for v1\n"
    # `make` did not run again: its output log belongs to the previous run
    make = next(e for e in log if e["type"] == "step.finished" and e["step_id"] == "make")
    assert make["duration_ms"] == 0


def test_from_step_of_a_named_run_with_a_new_input(project: Path) -> None:
    write_pipeline(project, "chain", CHAIN)
    old = run_id_of(swell("run", "chain", "--input", "old", cwd=project).stdout)
    swell("run", "chain", "--input", "newer", cwd=project)
    result = swell("run", "chain", "--from-step", "last", "--run", old, "--input", "x", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"reusing make, use from run {old}" in result.stdout
    status = swell_json("status", run_id_of(result.stdout), cwd=project)
    assert status["input"] == "x"
    assert [v["step_id"] for v in status["steps"]] == ["make", "use", "last"]


def test_from_step_refuses_what_cannot_start(project: Path) -> None:
    write_pipeline(project, "chain", CHAIN)
    none_yet = swell("run", "chain", "--from-step", "use", cwd=project)
    assert none_yet.returncode == 1
    assert "no earlier run of pipeline 'chain' to start from" in none_yet.stderr
    swell("run", "chain", "--input", "a", cwd=project)
    unknown = swell("run", "chain", "--from-step", "nope", cwd=project)
    assert "pipeline 'chain' has no step 'nope' (steps: make, use, last)" in unknown.stderr
    other = swell("run", "loop", cwd=project)
    wrong = swell(
        "run", "chain", "--from-step", "use", "--run", run_id_of(other.stdout), cwd=project
    )
    assert "is a run of pipeline 'loop', not 'chain'" in wrong.stderr
    usage = swell("run", "chain", "--run", "x", cwd=project)
    assert usage.returncode == 2 and "--run needs --from-step" in usage.stderr
    before = len(runs(project))
    swell("clean", cwd=project)  # the previous runs' workspaces are gone
    gone = swell("run", "chain", "--from-step", "use", cwd=project)
    assert gone.returncode == 1 and "workspace of run" in gone.stderr and "is gone" in gone.stderr
    assert len(runs(project)) == before


BIG = """
kind: WavePipeline
metadata: {name: big}
steps:
  - id: make
    script: mkdir d && cd d && seq 1 3000 | xargs touch
  - id: use
    dependencies: [make]
    script: ls d | wc -l
"""


def _kill_mid_copy(project: Path, state: Path, *args: str) -> str:
    """Start `swell run big --from-step use ARGS`, SIGKILL it while it copies the
    workspace (3,000 files: a second or more), and return the run it left."""
    before = {r["id"] for r in runs(project)}
    spaces = state / "workspaces"
    present = set(spaces.iterdir())
    proc = subprocess.Popen(
        swell_cmd("run", "big", "--from-step", "use", *args),
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: set(spaces.iterdir()) - present, interval=0.01)  # the copy began
    finally:
        proc.kill()
        proc.wait()
    (husk,) = [r for r in runs(project) if r["id"] not in before]
    assert husk["status"] == "pending"
    return str(husk["id"])


def test_a_from_step_killed_while_copying_is_never_a_source(
    project: Path, isolated_state: Path
) -> None:
    """A `--from-step` killed mid-copy left a `pending` run with a half-copied workspace,
    and the next `--from-step` picked it as its source ("step 'use' depends on make,
    which run R never finished"). Now the husk is passed over and marked failed."""
    write_pipeline(project, "big", BIG)
    first = swell("run", "big", cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    source = run_id_of(first.stdout)
    husk = _kill_mid_copy(project, isolated_state)
    named = swell("run", "big", "--from-step", "use", "--run", husk, cwd=project)
    assert named.returncode == 1, named.stdout + named.stderr
    assert f"run {husk} never started" in named.stderr and "Traceback" not in named.stderr
    husk = _kill_mid_copy(project, isolated_state)
    again = swell("run", "big", "--from-step", "use", cwd=project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"reusing make from run {source}" in again.stdout
    log = events(project, run_id_of(again.stdout))
    (use,) = [e for e in log if e["type"] == "step.finished" and e["step_id"] == "use"]
    assert use["output_tail"].strip() == "3000"  # the whole workspace
    marked = swell_json("status", husk, cwd=project)
    assert marked["status"] == "failed" and "--from-step" in marked["error"]
    assert not list((isolated_state / "workspaces").glob("*.copying"))
    # `swell resume` of a husk does not run the pipeline from scratch in a partial copy
    husk = _kill_mid_copy(project, isolated_state, "--run", source)
    resumed = swell("resume", husk, cwd=project)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "nothing ran in it" in resumed.stderr and "Traceback" not in resumed.stderr
    assert swell_json("status", husk, cwd=project)["status"] == "failed"
    assert [e["type"] for e in events(project, husk)] == ["run.finished"]


def test_from_step_needs_the_step_s_dependencies_finished(project: Path) -> None:
    write_pipeline(project, "chain", CHAIN)
    (project / "fail-make").write_text("")
    write_pipeline(project, "chain", CHAIN.replace('echo "made', 'exit 1; echo "made'))
    assert swell("run", "chain", cwd=project).returncode == 1
    result = swell("run", "chain", "--from-step", "last", cwd=project)
    assert result.returncode == 1
    assert "step 'last' depends on use, which run" in result.stderr
    assert "start from use (or an earlier step) instead" in result.stderr


# ------------------------------------------------------------------------- detach


def test_detach_returns_at_once_and_the_run_goes_on_without_a_terminal(
    project: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    held = SLOW.format(tag=tmp_path.name, seconds=0).replace(
        "sleep 0", f"while [ ! -f {go} ]; do sleep 0.1; done"
    )
    write_pipeline(project, "slow", held)
    result = swell("run", "slow", "--detach", cwd=project)
    assert result.returncode == 0, result.stderr
    run_id = run_id_of(result.stdout)
    assert f"follow it: swell logs {run_id} --follow" in result.stdout
    # back while its step waits for `go`: not waiting for the run ("pending" until the
    # process that claimed it records its start)
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] in ("pending", "running")
    if status["owner"]:
        pid = status["owner"]["pid"]
        assert os.getsid(pid) == pid  # leads a session of its own: no terminal's SIGHUP
        tty_nr = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[4])
        assert tty_nr == 0  # no controlling terminal
    go.touch()
    # `logs --follow` follows it to its end
    followed = swell("logs", run_id, "--follow", cwd=project, timeout=60)
    assert followed.returncode == 0
    assert "run succeeded" in followed.stdout
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"
    log = Path(
        json.loads(swell("run", "slow", "--detach", "-o", "json", cwd=project).stdout)["log"]
    )
    # the detached process prints what `-o json` asked for into its log
    wait_for(lambda: '"type":"run.finished"' in log.read_text().replace(" ", ""), timeout=60)


def test_a_detached_run_survives_the_hangup_of_the_session_that_started_it(
    project: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    tag = tmp_path.name
    write_pipeline(project, "slow", SLOW.format(tag=tag, seconds=4))
    # a "terminal": a session of its own, hung up once `swell run --detach` returned
    term = subprocess.Popen(
        [sys.executable, "-m", "swell", "run", "slow", "--detach", "-o", "quiet"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    out, err = term.communicate(timeout=60)
    assert term.returncode == 0, err
    run_id = out.strip()
    assert run_id.startswith("slow-") and "\n" not in run_id  # quiet: the id alone
    with contextlib.suppress(ProcessLookupError):  # gone already: nothing else was in it
        os.killpg(term.pid, signal.SIGHUP)
    wait_for(
        lambda: swell_json("status", run_id, cwd=project)["status"] in ("succeeded", "failed"),
        timeout=60,
    )
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


def test_status_logs_and_cancel_default_to_the_newest_run(project: Path, tmp_path: Path) -> None:
    tag = tmp_path.name
    write_pipeline(project, "slow", SLOW.format(tag=tag, seconds=60))
    swell("run", "loop", cwd=project)
    run_id = run_id_of(swell("run", "slow", "--detach", cwd=project).stdout)
    assert swell_json("status", cwd=project)["id"] == run_id
    logs = swell("logs", "-o", "json", cwd=project)
    assert {json.loads(line)["run_id"] for line in logs.stdout.splitlines()} == {run_id}
    cancelled = swell("cancel", cwd=project)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert f"cancelled run {run_id}" in cancelled.stdout
    assert swell_json("status", run_id, cwd=project)["status"] == "cancelled"
    wait_for(lambda: process_gone(f"slow-marker-{tag}"))


# ------------------------------------------------------------------ timeout, output


def test_timeout_stops_the_whole_run_and_leaves_it_resumable(project: Path, tmp_path: Path) -> None:
    tag = tmp_path.name
    write_pipeline(project, "slow", SLOW.format(tag=tag, seconds=60))
    started = time.monotonic()
    result = swell("run", "slow", "--timeout", "2s", cwd=project, timeout=60)
    assert time.monotonic() - started < 30
    assert result.returncode == 124, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert "warning: the run timed out after 2s (--timeout)" in result.stdout
    assert f"continue with: swell resume {run_id}" in result.stderr
    assert swell_json("status", run_id, cwd=project)["status"] == "interrupted"
    wait_for(lambda: process_gone(f"slow-marker-{tag}"))
    bad = swell("run", "slow", "--timeout", "soon", cwd=project)
    assert bad.returncode == 2 and "--timeout" in bad.stderr


def test_quiet_prints_nothing_but_errors(project: Path) -> None:
    ok = swell("run", "loop", "-o", "quiet", cwd=project)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    write_pipeline(project, "broken", "kind: WavePipeline\nsteps:\n  - id: s\n    script: exit 3\n")
    failed = swell("run", "broken", "-o", "quiet", cwd=project)
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.startswith("error: run broken-") and "failed" in failed.stderr


def test_verbose_shows_every_event(project: Path) -> None:
    plain = swell("run", "loop", cwd=project)
    verbose = swell("run", "loop", "-v", cwd=project)
    assert verbose.returncode == 0
    assert "· step.queued implement" not in plain.stdout
    assert "· step.queued implement  reason=entry" in verbose.stdout
    assert "· artifact.written implement  name=output" in verbose.stdout
    assert "✓ implement" in verbose.stdout  # the usual lines stay


ECHO_INPUT = """
kind: WavePipeline
metadata: {name: echo-input}
steps:
  - id: say
    script: echo "got {{ input }}" > said.txt
"""


def test_the_input_may_follow_the_pipeline_as_wave_takes_it(project: Path) -> None:
    write_pipeline(project, "echo-input", ECHO_INPUT)
    result = swell("run", "echo-input", "fix the login bug", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    status = swell_json("status", run_id_of(result.stdout), cwd=project)
    assert status["input"] == "fix the login bug"
    assert (Path(status["workspace"]) / "said.txt").read_text() == "got fix the login bug\n"


def test_the_input_given_twice_is_refused(project: Path) -> None:
    write_pipeline(project, "echo-input", ECHO_INPUT)
    result = swell("run", "echo-input", "one", "--input", "two", cwd=project)
    assert result.returncode == 2
    assert "give the input once" in result.stderr and "Traceback" not in result.stderr
    assert swell_json("list", cwd=project) == []
