"""Running pipelines from the CLI: a loop, output formats, errors, listing and logs.
Limits, the breaker and context routing are tested in process in tests/engine/test_loops.py."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline


def test_loop_fails_twice_then_passes(project: Path, isolated_state: Path) -> None:
    result = swell("run", "loop", "--input", "add a greeting", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert "FAIL test_greeting: expected 3 attempts, found 1" in result.stdout
    assert "run succeeded" in result.stdout

    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "succeeded"
    assert status["visits"] == 9
    visits = [(s["step_id"], s["visit"], s["outcome"]) for s in status["steps"]]
    assert [v for v in visits if v[0] == "run-tests"] == [
        ("run-tests", 1, "failure"),
        ("run-tests", 2, "failure"),
        ("run-tests", 3, "success"),
    ]
    assert status["context"] == {"tests_pass": "true"}
    work = isolated_state / "workspaces" / run_id / "work.txt"
    assert work.read_text().splitlines() == ["attempt: add a greeting"] * 3


def test_json_output_is_ndjson_events(project: Path) -> None:
    result = swell("run", "loop", "-o", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    # a visit that runs past 250 ms (a busy machine) also prints its output as it goes:
    # lines of type `output`, numbered per visit (docs/engine.md)
    lines = [e for e in printed if e["type"] != "output"]
    assert lines[0]["type"] == "run.started"
    assert lines[-1]["type"] == "run.finished" and lines[-1]["status"] == "succeeded"
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    run_ids = {e["run_id"] for e in lines}
    assert len(run_ids) == 1
    for event in lines:
        assert {"run_id", "seq", "ts", "type", "step_id", "visit"} <= event.keys()
        if event["type"] in ("step.started", "step.finished"):
            assert event["step_id"] and event["visit"] >= 1


def test_list_newest_first(project: Path) -> None:
    first = run_id_of(swell("run", "loop", cwd=project).stdout)
    second = run_id_of(swell("run", "review", "--auto-approve", cwd=project).stdout)
    runs = swell_json("list", cwd=project)
    assert [r["id"] for r in runs][:2] == [second, first]
    assert runs[0]["pipeline"] == "review" and runs[0]["status"] == "succeeded"
    assert runs[1]["pipeline"] == "loop"


def test_failed_run_exit_code_and_status(project: Path) -> None:
    write_pipeline(
        project,
        "boom",
        """
kind: WavePipeline
metadata: {name: boom}
steps:
  - id: only
    type: command
    script: echo "disk full" >&2; exit 3
""",
    )
    result = swell("run", "boom", cwd=project)
    assert result.returncode == 1
    assert "exit 3" in result.stdout and "disk full" in result.stdout
    assert "Traceback" not in result.stderr


def test_input_cannot_inject_shell(project: Path, isolated_state: Path) -> None:
    write_pipeline(
        project,
        "echo",
        """
kind: WavePipeline
metadata: {name: echo}
steps:
  - id: say
    type: command
    script: |
      echo {{ input }} > plain.txt
      echo "quoted: {{ input }}" > quoted.txt
      echo 'single: {{ input }}' > single.txt
""",
    )
    evil = "$(touch PWNED) `touch PWNED2`; touch PWNED3 \"' && touch PWNED4"
    result = swell("run", "echo", "--input", evil, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    ws = isolated_state / "workspaces" / run_id_of(result.stdout)
    assert not list(ws.glob("PWNED*")) and not list(project.glob("PWNED*"))
    assert (ws / "plain.txt").read_text() == evil + "\n"
    assert (ws / "quoted.txt").read_text() == f"quoted: {evil}\n"
    assert (ws / "single.txt").read_text() == f"single: {evil}\n"


def test_logs_show_events_and_step_output(project: Path) -> None:
    run_id = run_id_of(swell("run", "loop", cwd=project).stdout)
    logs = swell("logs", run_id, cwd=project)
    assert logs.returncode == 0
    assert "▶ implement" in logs.stdout and "run succeeded" in logs.stdout
    step_logs = swell("logs", run_id, "--step", "run-tests", cwd=project).stdout
    assert "| FAIL test_greeting: expected 3 attempts, found 2" in step_logs
    assert "implement" not in step_logs.replace("run-tests", "")


def test_validate_reports_file_line_col(project: Path) -> None:
    write_pipeline(
        project,
        "broken",
        """kind: WavePipeline
metadata: {name: broken}
steps:
  - id: a
    type: command
    script: echo hi
    dependencies: [ghost]
  - id: b
    type: command
    script: echo {{ context.never_set }}
    edgez: []
""",
    )
    result = swell("validate", cwd=project)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any(
        ln.endswith("unknown field 'edgez' (did you mean 'edges'?)") and ":11:5:" in ln
        for ln in lines
    ), lines
    assert "Traceback" not in result.stderr
    run = swell("run", "broken", cwd=project)
    assert run.returncode == 1 and "edgez" in run.stderr
    assert swell_json("list", cwd=project) == []


def test_validate_graph_errors_name_the_line(project: Path) -> None:
    write_pipeline(
        project,
        "graph",
        """kind: WavePipeline
metadata: {name: graph}
steps:
  - id: a
    type: command
    script: echo hi
    dependencies: [ghost]
  - id: b
    type: command
    script: echo {{ context.never_set }}
""",
    )
    result = swell("validate", "graph", cwd=project)
    assert result.returncode == 1
    assert "graph.yaml:7:20: unknown dependency 'ghost'" in result.stderr
    assert "graph.yaml:10:13: template variable 'context.never_set' is never set" in result.stderr


def test_yaml_syntax_error_is_one_clear_line(project: Path) -> None:
    (project / "wave.yaml").write_text("kind: WaveManifest\nproject: [unclosed\n")
    result = swell("run", "loop", cwd=project)
    assert result.returncode == 1
    assert result.stderr.startswith("wave.yaml:")
    assert "YAML syntax error" in result.stderr and "Traceback" not in result.stderr


def test_unknown_pipeline_suggests_a_name(project: Path) -> None:
    result = swell("run", "helo", cwd=project)
    assert result.returncode == 1
    assert "did you mean 'hello'" in result.stderr


def test_no_project_is_a_clear_error(tmp_path: Path) -> None:
    result = swell("list", cwd=tmp_path)
    assert result.returncode == 1
    assert "no wave.yaml or swell.yaml" in result.stderr


def test_init_then_run(tmp_path: Path) -> None:
    target = tmp_path / "fresh"
    target.mkdir()
    assert swell("init", cwd=target).returncode == 0
    assert (target / "wave.yaml").is_file()
    assert swell("validate", cwd=target).returncode == 0
    result = swell("run", "hello", "--input", "hi", cwd=target)
    assert result.returncode == 0, result.stdout + result.stderr
    again = swell("init", cwd=target)
    assert again.returncode == 1 and "already exists" in again.stderr


def test_two_runs_write_one_store_at_once(project: Path) -> None:
    procs = [start_swell("run", "loop", cwd=project) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    runs = swell_json("list", cwd=project)
    assert len(runs) == 3 and {r["status"] for r in runs} == {"succeeded"}
    for r in runs:
        seqs = [e["seq"] for e in events(project, r["id"])]
        assert seqs == list(range(1, len(seqs) + 1))


def test_logs_follow_ends_with_the_run(project: Path) -> None:
    write_pipeline(
        project,
        "short",
        """
kind: WavePipeline
metadata: {name: short}
steps:
  - id: a
    type: command
    script: sleep 1; echo done
""",
    )
    proc = start_swell("run", "short", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    follow = swell("logs", run_id, "--follow", cwd=project, timeout=60)
    proc.communicate(timeout=30)
    assert follow.returncode == 0
    assert "▶ a" in follow.stdout and "run succeeded" in follow.stdout


def test_artifacts_flow_between_steps_by_template(project: Path) -> None:
    write_pipeline(
        project,
        "arts",
        """
kind: WavePipeline
metadata: {name: arts}
steps:
  - id: report
    exec:
      type: command
      source: echo "3 findings"
    output_artifacts:
      - {name: findings, path: out/findings.txt, source: stdout, required: true}
  - id: summarize
    type: command
    dependencies: [report]
    memory:
      inject_artifacts:
        - {step: report, artifact: findings, as: input_findings}
    script: |
      cat {{ steps.report.artifacts.findings }} > summary.txt
      cat {{ artifacts.input_findings }} >> summary.txt
    output_artifacts:
      - {name: summary, path: summary.txt, required: true}
  - id: missing
    type: command
    dependencies: [summarize]
    script: "true"
    output_artifacts:
      - {name: nothing, path: never-written.txt, required: true}
""",
    )
    result = swell("run", "arts", cwd=project)
    assert result.returncode == 1
    assert "required artifact 'nothing' (never-written.txt) is missing or empty" in result.stdout
    run_id = run_id_of(result.stdout)
    arts = {a["name"]: a for a in swell_json("artifacts", run_id, cwd=project)}
    assert Path(arts["summary"]["path"]).read_text() == "3 findings\n3 findings\n"
    assert arts["findings"]["size"] == len("3 findings\n") and len(arts["findings"]["sha256"]) == 64
    assert arts["output"]["step_id"] in ("report", "summarize")


def test_required_tools_are_checked_before_the_run(project: Path) -> None:
    write_pipeline(
        project,
        "needs",
        """
kind: WavePipeline
metadata: {name: needs}
requires: {tools: [sh, definitely-not-a-tool-xyz]}
steps:
  - id: a
    type: command
    script: "true"
""",
    )
    result = swell("run", "needs", cwd=project)
    assert result.returncode == 1
    assert "requires definitely-not-a-tool-xyz on PATH" in result.stderr
    assert swell_json("list", cwd=project) == []


def test_list_columns_line_up_when_a_status_is_long(project: Path, isolated_state: Path) -> None:
    """A run whose process died reads `running (process gone: swell resume)`; the
    visits and time columns of every line still start at the same place."""
    write_pipeline(
        project,
        "stuck",
        "kind: WavePipeline\nsteps:\n  - id: s\n    script: touch started; sleep 30\n",
    )
    done = run_id_of(swell("run", "loop", cwd=project).stdout)
    proc = start_swell("run", "stuck", cwd=project)
    assert proc.stdout is not None
    gone = run_id_of(proc.stdout.readline())
    wait_for(lambda: (isolated_state / "workspaces" / gone / "started").exists())
    proc.kill()
    proc.communicate(timeout=30)
    try:
        listed = swell("list", cwd=project)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert [line.split()[0] for line in lines] == [gone, done]
        assert "running (process gone: swell resume)" in lines[0]
        assert "succeeded" in lines[1]
        # the visits column ends, and the creation time starts, at one place on every line
        assert len({line.index(" visits ") for line in lines}) == 1, listed.stdout
        assert len({line.rindex(line.split()[-1]) for line in lines}) == 1, listed.stdout
    finally:
        swell("cancel", gone, cwd=project)
