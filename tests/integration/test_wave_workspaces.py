"""Wave's workspace semantics from the CLI: `./` mounts (never the run's own state,
Wave's skip-list, the mount target as a command step's directory), `subset_from`,
and command scripts that need bash."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import run_id_of, swell, write_pipeline


def _state_inside(project: Path) -> dict[str, str]:
    """The default layout: the state directory (`.swell/`) inside the project."""
    return {**os.environ, "SWELL_STATE_DIR": str(project / ".swell")}


def test_a_dot_mount_copies_the_project_but_never_the_runs_own_state(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hi')\n")
    for skipped in ("node_modules/left-pad", ".venv/bin", "pkg/__pycache__", ".git/objects"):
        (project / skipped).mkdir(parents=True)
        (project / skipped / "f").write_text("x")
    (project / "manual.pdf").write_bytes(b"%PDF")
    (project / "release.tar.gz").write_bytes(b"gz")
    (project / "big.bin").write_bytes(b"\0" * (10 * 1024 * 1024 + 1))
    write_pipeline(
        project,
        "mount",
        """
kind: WavePipeline
metadata: {name: mount}
steps:
  - id: look
    type: command
    workspace:
      mount: [{source: ./, target: /project}]
    script: |
      echo "cwd=$(basename "$PWD")"
      test -f src/app.py && test -f wave.yaml
      for p in .swell node_modules .venv pkg/__pycache__ .git/objects .agents manual.pdf release.tar.gz big.bin; do
        if [ -e "$p" ]; then echo "copied $p"; exit 1; fi
      done
""",
    )
    env = _state_inside(project)
    # a first run leaves state (a database, a workspace) that the second must not copy
    first = swell("run", "mount", cwd=project, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    result = swell("run", "mount", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    logs = swell("logs", run_id_of(result.stdout), "--step", "look", cwd=project, env=env)
    assert "cwd=project" in logs.stdout


def test_subset_from_copies_only_the_listed_files_and_falls_back_to_all(project: Path) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (project / "src" / name).parent.mkdir(exist_ok=True)
        (project / "src" / name).write_text(name)
    write_pipeline(
        project,
        "subset",
        """
kind: WavePipeline
metadata: {name: subset}
steps:
  - id: pick
    type: command
    script: |
      echo '{"scope": {"files": ["a.py", "c.py"]}}' > pick.json
    output_artifacts: [{name: picked, path: pick.json, type: json}]
  - id: narrow
    type: command
    dependencies: [pick]
    workspace:
      mount: [{source: ./src, target: /code, subset_from: "pick.picked.scope.files"}]
    script: ls code | tr '\\n' ' '; echo
  - id: wide
    type: command
    dependencies: [narrow]
    workspace:
      mount: [{source: ./src, target: /all, subset_from: "nobody.none.files"}]
    script: ls all | tr '\\n' ' '; echo
""",
    )
    result = swell("run", "subset", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert "a.py c.py" in swell("logs", run_id, "--step", "narrow", cwd=project).stdout
    wide = swell("logs", run_id, "--step", "wide", cwd=project).stdout
    assert "a.py b.py c.py" in wide
    assert "subset_from" in wide and "whole source" in wide  # the fallback is said


def test_a_subset_path_that_leaves_the_source_is_not_copied(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("a")
    write_pipeline(
        project,
        "subset",
        """
kind: WavePipeline
metadata: {name: subset}
steps:
  - id: pick
    type: command
    script: |
      echo '["a.py", "../wave.yaml", "/etc/passwd"]' > pick.json
    output_artifacts: [{name: picked, path: pick.json, type: json}]
  - id: narrow
    type: command
    dependencies: [pick]
    workspace:
      mount: [{source: ./src, target: /code, subset_from: "pick.picked"}]
    script: cd code && find . -type f | sort | tr '\\n' ' '; echo
""",
    )
    result = swell("run", "subset", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    logs = swell("logs", run_id_of(result.stdout), "--step", "narrow", cwd=project).stdout
    out = [line for line in logs.splitlines() if line.strip().startswith("|")]
    assert out == ["    | ./a.py"]
    assert "not copied (outside the source, links or missing): ../wave.yaml, /etc/passwd" in logs


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_command_scripts_run_under_bash(project: Path) -> None:
    write_pipeline(
        project,
        "bashy",
        """
kind: WavePipeline
metadata: {name: bashy}
steps:
  - id: pipes
    type: command
    script: |
      set -o pipefail
      diff <(printf 'a\\n') <(printf 'a\\n') && echo same
      false | cat
""",
    )
    result = swell("run", "bashy", cwd=project)
    assert result.returncode == 1, result.stdout  # pipefail made `false | cat` fail
    logs = swell("logs", run_id_of(result.stdout), "--step", "pipes", cwd=project).stdout
    assert "same" in logs


def test_a_bash_script_without_bash_says_so(project: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "git", "cat"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    write_pipeline(
        project,
        "bashy",
        """
kind: WavePipeline
metadata: {name: bashy}
steps:
  - id: pipes
    type: command
    script: |
      set -o pipefail
      echo fine | cat
""",
    )
    env = {**os.environ, "PATH": str(bin_dir)}
    result = swell("run", "bashy", cwd=project, env=env)
    assert result.returncode == 1
    assert "needs bash" in result.stdout and "not on PATH" in result.stdout
