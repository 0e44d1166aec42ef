"""The cost ledger, the stall watchdog and pipeline outputs through the CLI, on the
fixture project tests/fixtures/ledger (scripted usage numbers, command steps, and a
stand-in agent CLI that hangs)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from conftest import REPO, events, run_id_of, swell, swell_json, wait_for

FIXTURE = REPO / "tests" / "fixtures" / "ledger"


@pytest.fixture(name="ledger")
def ledger_fixture(tmp_path: Path) -> Path:
    dest = tmp_path / "ledger"
    shutil.copytree(FIXTURE, dest)
    return dest


def test_the_fixture_validates_without_not_run_warnings(ledger: Path) -> None:
    result = swell("validate", "--all", cwd=ledger)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "does not run" not in result.stdout + result.stderr
    assert result.stdout.strip().startswith("ok:")


def test_warn_at_warns_once_and_the_ceiling_stops_the_next_step(ledger: Path) -> None:
    result = swell("run", "spend", "caching", cwd=ledger)
    assert result.returncode == 1, result.stdout + result.stderr
    ceiling = (
        "budget exceeded: the run has spent $2.2500, reaching runtime.cost.budget_ceiling "
        "$2.0000; step 'publish' was not started"
    )
    assert "budget warning: the run has spent $1.3500, past runtime.cost.warn_at $1.0000" in (
        result.stdout
    )
    assert result.stdout.rstrip().endswith(ceiling)
    assert "Traceback" not in result.stderr
    run_id = run_id_of(result.stdout)
    logged = swell("logs", run_id, cwd=ledger).stdout
    assert logged.count("budget warning:") == 1
    assert ceiling in swell("logs", run_id, "--errors", cwd=ledger).stdout
    kinds = [e["type"] for e in events(ledger, run_id)]
    assert kinds.count("budget.warning") == kinds.count("budget.exceeded") == 1
    started = [e["step_id"] for e in events(ledger, run_id) if e["type"] == "step.started"]
    assert started == ["survey", "analyse", "summarise"]
    # costs and models in `swell status`
    text = swell("status", run_id, cwd=ledger).stdout
    assert "cost      $2.2500" in text
    survey = next(line for line in text.splitlines() if line.strip().startswith("survey"))
    assert survey.endswith("$0.6000  claude-sonnet-4-5")
    data = swell_json("status", run_id, cwd=ledger)
    assert data["cost_usd"] == pytest.approx(2.25)
    assert [(s["step_id"], s["model"], s["adapter"], s["cost_usd"]) for s in data["steps"]] == [
        ("survey", "claude-sonnet-4-5", "scripted", 0.6),
        ("analyse", "claude-sonnet-4-5", "scripted", 0.75),
        ("summarise", "claude-sonnet-4-5", "scripted", 0.9),
    ]


def test_a_pipeline_reads_the_newest_succeeded_runs_outputs(ledger: Path) -> None:
    before = swell("run", "followup", cwd=ledger)
    assert before.returncode == 1
    assert (
        "input artifact 'findings' of pipeline 'research' is not available: pipeline "
        "'research' has no succeeded run in this project"
    ) in before.stdout
    optional = swell("run", "followup-optional", cwd=ledger)
    assert optional.returncode == 0, optional.stdout + optional.stderr

    research = swell("run", "research", cwd=ledger)
    assert research.returncode == 0, research.stdout + research.stderr
    produced = run_id_of(research.stdout)
    outputs = swell_json("status", produced, cwd=ledger)["pipeline_outputs"]
    assert outputs["findings"]["type"] == "findings_report"
    assert Path(outputs["findings"]["path"]).name == "findings.json"
    assert (outputs["count"]["field"], outputs["count"]["value"]) == (".count", 3)
    text = swell("status", produced, cwd=ledger).stdout
    assert "pipeline outputs\n  findings (findings_report): " in text
    assert "  count (string): " in text and " = 3   (step findings, artifact report)" in text

    after = swell("run", "followup", cwd=ledger)
    assert after.returncode == 0, after.stdout + after.stderr
    shown = swell("logs", run_id_of(after.stdout), "--step", "read", cwd=ledger).stdout
    assert '{"topic": "caching", "count": 3}' in shown

    # a `pipeline_outputs` type names a schema, `type: json` a file format: as in Wave,
    # no mismatch; the file is also at Wave's `.agents/artifacts/<as>`
    as_json = swell("run", "followup-as-json", cwd=ledger)
    assert as_json.returncode == 0, as_json.stdout + as_json.stderr
    assert "warning" not in as_json.stdout
    shown = swell("logs", run_id_of(as_json.stdout), "--step", "read", cwd=ledger).stdout
    assert '{"topic": "caching", "count": 3}' in shown


def test_a_parent_hands_its_outputs_down_and_injects_its_childs(ledger: Path) -> None:
    result = swell("run", "outer", "the cache", cwd=ledger)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    # the child read the parent's `plan` output while the parent ran; the parent's `use`
    # step injected the child's `verdict` output through its sub-pipeline step
    shown = swell("logs", run_id, "--step", "use", cwd=ledger).stdout
    assert "approved: plan for the cache" in shown
    outputs = swell_json("status", run_id, cwd=ledger)["pipeline_outputs"]
    assert {name: Path(o["path"]).name for name, o in outputs.items()} == {
        "plan": "plan.md",
        "verdict": "judged.txt",
    }


HANGING_AGENT = """#!/bin/sh
# a stand-in agent CLI: starts a helper, then prints nothing and never ends
sleep 300 &
echo $! > "{pids}/helper.pid"
echo $$ > "{pids}/agent.pid"
wait
"""


def _alive(pid_file: Path) -> bool:
    """Running (a zombie waiting for a parent that never reaps it has ended)."""
    try:
        stat_line = Path(f"/proc/{int(pid_file.read_text())}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat_line.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_stalled_agent_fails_its_step_and_its_processes_are_ended(ledger: Path) -> None:
    pids = ledger / "pids"
    pids.mkdir()
    agent = ledger / "hanging-agent"
    agent.write_text(HANGING_AGENT.format(pids=pids))
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    (ledger / "wave.yaml").write_text(
        """kind: WaveManifest
adapters:
  claude: {binary: ./hanging-agent}
personas:
  analyst: {adapter: claude}
runtime:
  stall_timeout: 2s
"""
    )
    (ledger / ".agents" / "pipelines" / "hang.yaml").write_text(
        """kind: WavePipeline
steps:
  - id: think
    persona: analyst
    exec: {source: "Think."}
"""
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "not-used"}  # it never calls a model
    result = swell("run", "hang", cwd=ledger, timeout=60, env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "timeout: stalled: no output or events from the agent for 2s "
        "(runtime.stall_timeout: 2s); the agent was stopped"
    ) in result.stdout
    assert (pids / "helper.pid").exists()
    wait_for(lambda: not _alive(pids / "agent.pid") and not _alive(pids / "helper.pid"), 10)
