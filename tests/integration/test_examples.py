"""Every example pipeline runs warning-free, as the README and the docs show them: a
warning on a pipeline we ship is either a defect or noise a new user learns to skip."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EXAMPLES, swell

PIPELINES = sorted(p.stem for p in (EXAMPLES / ".agents" / "pipelines").glob("*.yaml"))


@pytest.mark.parametrize("name", PIPELINES)
def test_each_example_runs_without_a_warning(project: Path, name: str) -> None:
    result = swell("run", name, "--input", "add a greeting", "--auto-approve", cwd=project)
    shown = result.stdout + result.stderr
    assert result.returncode == 0, shown
    assert "warning" not in shown.lower(), shown
