"""The conformance harness with `runtime.sandbox.enabled: true` (scripts/wave-e2e
--sandbox): fixture pipelines run end to end with every process in the sandbox, the
real claude CLI against the auto twin (docs/conformance.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from wave_harness import SANDBOX, Harness, copy_project, fixture_project
from wave_sweep import FIXTURE

from agent_clis import cli_path

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]


# a plain prompt step, a worktree step reworked after a failed review (it commits),
# and the forge commands a persona runs through its shell
@pytest.mark.parametrize("pipeline", ["hello", "implement-rework", "forge-commands"])
def test_a_fixture_pipeline_runs_sandboxed(tmp_path: Path, pipeline: str) -> None:
    cli_path("claude")
    template = fixture_project(FIXTURE, tmp_path / "template")
    project = copy_project(template, tmp_path / "project")
    rework = pipeline == "implement-rework"
    with Harness(tmp_path / "work", fail_first_review=rework, sandbox=True) as harness:
        result = harness.run(project, pipeline)
    assert result.reached_end and not result.tool_errors, result.output[-3000:]
    manifest = yaml.safe_load((project / "wave.yaml").read_text())
    assert manifest["runtime"]["sandbox"] == SANDBOX
    assert result.run_id
    # each agent visit ran in the run's home, and reached its model through the proxy
    assert (project / ".swell" / "runs" / result.run_id / ".home" / ".claude").is_dir()
