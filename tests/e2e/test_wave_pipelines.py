"""Wave's own 46 pipelines (re-cinq/wave at WAVE_COMMIT) through `swell run` with the
real Claude Code CLI against the auto twin: each should reach its end.

Slow (minutes each on a small machine) and it needs Wave's checkout, which CI does
not have: marked `wave_e2e`, left out of `make test`, run by `make wave-e2e` or
`scripts/wave-e2e` (which also prints the table). With SWELL_WAVE_REPO unset the
test skips; pointed at another commit it fails saying so. Set SWELL_WAVE_E2E_RESULTS
to a file to get the markdown table there as the tests go.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from wave_harness import (
    WAVE_COMMIT,
    WAVE_ENV,
    Harness,
    Result,
    check_wave_commit,
    copy_project,
    wave_checkout,
    wave_project,
)
from wave_sweep import report

from agent_clis import cli_path

pytestmark = [pytest.mark.wave_e2e, pytest.mark.agent_cli, pytest.mark.slow]


def _names() -> list[str]:
    """The checkout's pipelines (read without extracting anything), else one
    placeholder that skips."""
    repo = wave_checkout()
    if repo is None:
        return ["(SWELL_WAVE_REPO not set)"]
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "--name-only", "HEAD", ".agents/pipelines/"],
        capture_output=True,
        text=True,
    )
    names = [Path(line).stem for line in listed.stdout.split() if line.endswith(".yaml")]
    return sorted(names) or ["(no pipelines in SWELL_WAVE_REPO)"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = wave_checkout()
    if repo is None:
        pytest.skip(
            f"{WAVE_ENV} is not set: point it at a checkout of re-cinq/wave at {WAVE_COMMIT}"
        )
    check_wave_commit(repo)  # a clear failure when the checkout is at another commit
    cli_path("claude")
    return wave_project(repo, tmp_path_factory.mktemp("wave") / "template")


RESULTS: list[Result] = []


@pytest.mark.parametrize("pipeline", _names())
def test_wave_pipeline_reaches_its_end(template: Path, tmp_path: Path, pipeline: str) -> None:
    project = copy_project(template, tmp_path / "project")
    with Harness(tmp_path / "work") as harness:
        result = harness.run(project, pipeline)
    RESULTS.append(result)
    if out := os.environ.get("SWELL_WAVE_E2E_RESULTS"):
        Path(out).write_text(report(RESULTS, len(_names()), "Wave's pipelines (pytest)"))
    assert result.reached_end, f"{pipeline}: {result.status}: {result.first_error}"
