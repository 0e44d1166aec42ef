"""Issue 33: `swell diff RUN [STEP[#VISIT]] [--stat]` and the API's visit diff show what
a visit (or the whole run) changed, from its checkpoints; a bad STEP#VISIT is one
clear error."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_checkpoints import LOOP

from conftest import run_id_of, swell, write_pipeline


@pytest.fixture
def run_id(project: Path) -> str:
    write_pipeline(project, "cnt", LOOP)
    result = swell("run", "cnt", cwd=project)
    assert result.returncode == 0, result.stderr
    return run_id_of(result.stdout)


def test_diff_of_a_visit_and_of_the_run(project: Path, run_id: str) -> None:
    second = swell("diff", run_id, "work#2", cwd=project)
    assert second.returncode == 0, second.stderr
    assert "--- a/counter.txt" in second.stdout and "+line 2" in second.stdout
    assert "+line 1" not in second.stdout and ".gitignore" not in second.stdout
    first = swell("diff", run_id, "work#1", "--stat", cwd=project)
    assert ".gitignore" in first.stdout and "counter.txt" in first.stdout
    assert "2 files changed" in first.stdout
    quiet = swell("diff", run_id, "work#4", cwd=project)  # only an ignored file changed
    assert quiet.returncode == 0 and quiet.stdout == "" and "no changes" in quiet.stderr
    whole = swell("diff", run_id, cwd=project)
    assert (
        "+line 1" in whole.stdout and "+line 3" in whole.stdout and "build.log" not in whole.stdout
    )
    newest = swell("diff", run_id, "work", cwd=project)  # a step alone: its newest visit
    assert newest.returncode == 0 and newest.stdout == ""


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("work#9", "has no work#9: step 'work' ran visits 1, 2, 3, 4, 5"),
        ("other#1", "has no visit of step 'other' (its steps: work)"),
        ("work#x", "'work#x' is not STEP or STEP#VISIT"),
        ("work#0", "'work#0' is not STEP or STEP#VISIT"),
    ],
)
def test_a_bad_visit_is_one_clear_error(
    project: Path, run_id: str, spec: str, message: str
) -> None:
    result = swell("diff", run_id, spec, cwd=project)
    assert result.returncode != 0 and message in result.stderr
    assert "Traceback" not in result.stderr
