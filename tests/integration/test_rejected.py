"""`on_failure: rejected`: a contract turns the work down; the run ends `rejected`,
which is an answer (exit 0), not an error, and is not retried or resumed."""

from __future__ import annotations

from pathlib import Path

from conftest import run_id_of, swell, swell_json, write_pipeline

PIPELINE = """
kind: WavePipeline
metadata: {name: triage}
steps:
  - id: assess
    script: echo "not reproducible" > verdict.txt
    retry: {max_attempts: 3}
    handover:
      contracts:
        - type: test_suite
          command: grep -q reproducible-yes verdict.txt
          on_failure: rejected
  - id: fix
    dependencies: [assess]
    script: echo fixing
"""


def test_a_rejected_run_exits_0_and_stays_rejected(project: Path) -> None:
    write_pipeline(project, "triage", PIPELINE)
    result = swell("run", "triage", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert "rejected" in result.stdout.splitlines()[-1]
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "rejected"
    assert [s["step_id"] for s in status["steps"]] == ["assess"]  # no retry, no fix
    again = swell("resume", run_id, cwd=project)
    assert again.returncode != 0 and "rejected" in again.stderr
    assert "Traceback" not in again.stderr


def test_quiet_output_names_the_rejection(project: Path) -> None:
    write_pipeline(project, "triage", PIPELINE)
    result = swell("run", "triage", "-o", "quiet", cwd=project)
    assert result.returncode == 0
    assert "rejected: " in result.stdout and "test_suite" in result.stdout
