"""Workspaces: the run directory, git worktrees, read-only mounts, injected artifacts, diffs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import run_id_of, swell, swell_json, write_pipeline
from swell.workspace.workspace import open_directory


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
        },
    ).stdout


@pytest.fixture
def repo(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('v1')\n")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "initial")
    return project


def test_worktree_steps_share_a_branch_and_leave_the_checkout_alone(repo: Path) -> None:
    write_pipeline(
        repo,
        "feature",
        """
kind: WavePipeline
metadata: {name: feature}
steps:
  - id: implement
    type: command
    workspace: {type: worktree, branch: "feature/{{ run.id }}"}
    script: |
      sed -i 's/v1/v2/' src/app.py
      echo "new" > src/new.py
  - id: check
    type: command
    dependencies: [implement]
    workspace: {ref: implement}
    script: grep -q v2 src/app.py && test -f src/new.py && git rev-parse --abbrev-ref HEAD
""",
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "pipeline")
    result = swell("run", "feature", cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert (
        repo / "src" / "app.py"
    ).read_text() == "print('v1')\n"  # the user's checkout is untouched
    assert f"feature/{run_id}" in _git(repo, "branch", "--list", "feature/*")
    logs = swell("logs", run_id, "--step", "check", cwd=repo).stdout
    assert f"feature/{run_id}" in logs


def test_worktree_needs_a_git_repository(project: Path) -> None:
    write_pipeline(
        project,
        "wt",
        """
kind: WavePipeline
metadata: {name: wt}
steps:
  - id: a
    type: command
    workspace: {type: worktree, branch: x}
    script: "true"
""",
    )
    result = swell("run", "wt", cwd=project)
    assert result.returncode == 1
    assert "needs" in result.stdout and "git repository" in result.stdout


def test_read_only_mount_cannot_be_changed(project: Path, isolated_state: Path) -> None:
    (project / "specs").mkdir()
    (project / "specs" / "spec.md").write_text("the spec\n")
    write_pipeline(
        project,
        "ro",
        """
kind: WavePipeline
metadata: {name: ro}
steps:
  - id: tamper
    type: command
    workspace:
      mount: [{source: ./specs, target: /specs, mode: readonly}]
    script: |
      cat specs/spec.md
      chmod -R u+w specs; echo "changed" > specs/spec.md
""",
    )
    result = swell("run", "ro", cwd=project)
    assert result.returncode == 1
    assert "wrote to the read-only mount specs/" in result.stdout
    ws = isolated_state / "workspaces" / run_id_of(result.stdout)
    assert (ws / "specs" / "spec.md").read_text() == "the spec\n"
    assert (project / "specs" / "spec.md").read_text() == "the spec\n"


def test_a_step_in_a_read_only_mount_writes_its_outputs_under_agents(
    project: Path, isolated_state: Path
) -> None:
    # Wave's pattern: the script runs in the project's mount, writes .agents/output there
    write_pipeline(
        project,
        "ro-out",
        """
kind: WavePipeline
metadata: {name: ro-out}
steps:
  - id: read
    type: command
    workspace:
      mount: [{source: ./, target: /project, mode: readonly}]
    script: |
      mkdir -p .agents/output
      grep -c . wave.yaml > .agents/output/count.txt
    output_artifacts: [{name: count, path: .agents/output/count.txt, required: true}]
    handover:
      contract: {type: non_empty_file, source: .agents/output/count.txt}
""",
    )
    result = swell("run", "ro-out", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "✓ contract 1 non_empty_file" in result.stdout  # found where the script wrote it
    ws = isolated_state / "workspaces" / run_id_of(result.stdout)
    lines = [ln for ln in (project / "wave.yaml").read_text().splitlines() if ln]
    count = ws / "project" / ".agents" / "output" / "count.txt"
    assert count.read_text().strip() == str(len(lines))
    assert not (project / ".agents" / "output").exists()  # the project is untouched


def test_injected_artifacts_land_in_the_consumer_workspace(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(
        project,
        "inject",
        """
kind: WavePipeline
metadata: {name: inject}
steps:
  - id: plan
    type: command
    script: mkdir -p out && echo "the plan" > out/plan.md
    output_artifacts: [{name: plan, path: out/plan.md, required: true}]
  - id: build
    type: command
    dependencies: [plan]
    memory:
      inject_artifacts: [{step: plan, artifact: plan, as: the_plan}]
    script: cat .wave/artifacts/the_plan {{ artifacts.the_plan }}
""",
    )
    result = swell("run", "inject", cwd=project)
    assert result.returncode == 0, result.stdout
    run_id = run_id_of(result.stdout)
    ws = isolated_state / "workspaces" / run_id
    assert (ws / ".wave" / "artifacts" / "the_plan").read_text() == "the plan\n"
    assert "| the plan" in swell("logs", run_id, "--step", "build", cwd=project).stdout


def test_prompt_lists_input_and_output_artifacts(project: Path) -> None:
    (project / "scripts" / "one.yaml").write_text(
        "replies:\n  - {step: write, text: ok, files: {report.md: done}}\n"
    )
    (project / "wave.yaml").write_text(
        (project / "wave.yaml")
        .read_text()
        .replace(
            "script: scripts/agent-replies.yaml",
            "script: scripts/one.yaml\n      calls: calls.jsonl",
        )
    )
    write_pipeline(
        project,
        "lists",
        """
kind: WavePipeline
metadata: {name: lists}
steps:
  - id: plan
    type: command
    script: echo plan > plan.txt
    output_artifacts: [{name: plan, path: plan.txt}]
  - id: write
    persona: implementer
    dependencies: [plan]
    memory:
      inject_artifacts: [{step: plan, artifact: plan, as: plan}]
    exec: {type: prompt, source: "Write the report."}
    output_artifacts: [{name: report, path: report.md, required: true, type: markdown}]
""",
    )
    result = swell("run", "lists", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr

    call = json.loads((project / "calls.jsonl").read_text().splitlines()[0])
    assert (
        "## Input artifacts\n- plan: `.agents/artifacts/plan` (artifact 'plan' of step 'plan')"
        in call["prompt"]
    )
    assert "- `report.md` (report; required, markdown)" in call["prompt"]
    arts = {a["name"] for a in swell_json("artifacts", run_id_of(result.stdout), cwd=project)}
    assert {"plan", "report"} <= arts


def test_directory_workspace_diff_includes_untracked_files(tmp_path: Path) -> None:
    ws = open_directory(tmp_path / "ws")
    (ws.path / "a.txt").write_text("hello\n")
    (ws.path / "sub").mkdir()
    (ws.path / "sub" / "b.txt").write_text("world\n")
    diff = ws.diff()
    assert "+++ b/a.txt" in diff and "+hello" in diff and "+++ b/sub/b.txt" in diff
    assert sorted(ws.changed_files()) == ["a.txt", "sub/b.txt"]


def test_a_read_only_mount_swapped_for_a_link_is_restored_without_touching_the_target(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    victim.chmod(0o444)
    (project / "notes.md").write_text("notes\n")
    write_pipeline(
        project,
        "swap",
        f"""
kind: WavePipeline
metadata: {{name: swap}}
steps:
  - id: tamper
    type: command
    workspace:
      mount: [{{source: ./notes.md, mode: readonly}}]
    script: rm -f notes.md && ln -s {victim} notes.md
""",
    )
    result = swell("run", "swap", cwd=project)
    assert result.returncode == 1
    assert "wrote to the read-only mount notes.md/" in result.stdout
    assert oct(victim.stat().st_mode & 0o777) == oct(0o444)  # chmod never followed the link
    assert victim.read_text() == "not yours\n"
    ws = isolated_state / "workspaces" / run_id_of(result.stdout)
    assert not (ws / "notes.md").is_symlink() and (ws / "notes.md").read_text() == "notes\n"


def test_an_artifact_swapped_for_a_link_is_not_injected(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN PRIVATE KEY-----\n")
    write_pipeline(
        project,
        "leak",
        f"""
kind: WavePipeline
metadata: {{name: leak}}
steps:
  - id: plan
    type: command
    script: mkdir -p out && echo "the plan" > out/plan.md
    output_artifacts: [{{name: plan, path: out/plan.md, required: true}}]
  - id: tamper
    type: command
    dependencies: [plan]
    script: rm out/plan.md && ln -s {secret} out/plan.md
  - id: build
    type: command
    dependencies: [tamper]
    memory:
      inject_artifacts: [{{step: plan, artifact: plan, as: the_plan}}]
    script: cat .wave/artifacts/the_plan
""",
    )
    result = swell("run", "leak", cwd=project)
    assert result.returncode == 1
    assert "was replaced by a symbolic link after it was written; not injecting it" in result.stdout
    ws = isolated_state / "workspaces" / run_id_of(result.stdout)
    assert not (ws / ".wave" / "artifacts" / "the_plan").exists()
    assert "PRIVATE KEY" not in swell("logs", run_id_of(result.stdout), cwd=project).stdout


def test_a_changed_artifact_is_not_injected(project: Path) -> None:
    write_pipeline(
        project,
        "changed",
        """
kind: WavePipeline
metadata: {name: changed}
steps:
  - id: plan
    type: command
    script: echo "the plan" > plan.md
    output_artifacts: [{name: plan, path: plan.md}]
  - id: edit
    type: command
    dependencies: [plan]
    script: echo "another plan" > plan.md
  - id: build
    type: command
    dependencies: [edit]
    memory:
      inject_artifacts: [{step: plan, artifact: plan}]
    script: cat .wave/artifacts/plan
""",
    )
    result = swell("run", "changed", cwd=project)
    assert result.returncode == 1
    assert "input artifact 'plan' of step 'plan'" in result.stdout
    assert "changed after it was written (sha256" in result.stdout


def test_a_log_path_planted_by_a_step_is_replaced_not_written_through(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("# mine\n")
    write_pipeline(
        project,
        "plant",
        f"""
kind: WavePipeline
metadata: {{name: plant}}
steps:
  - id: plant
    type: command
    script: |
      mkdir -p "../../runs/$SWELL_RUN_ID/next"
      ln -s {victim} "../../runs/$SWELL_RUN_ID/next/1.log"
  - id: next
    type: command
    dependencies: [plant]
    script: echo "log line"
""",
    )
    result = swell("run", "plant", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert (isolated_state / "runs" / run_id / "next").is_dir()  # the plant did land
    assert victim.read_text() == "# mine\n"
    assert "log line" in swell("logs", run_id, "--step", "next", cwd=project).stdout


def test_a_rendered_branch_that_would_leave_the_workspace_is_refused(
    repo: Path, isolated_state: Path
) -> None:
    write_pipeline(
        repo,
        "escape",
        """
kind: WavePipeline
metadata: {name: escape}
steps:
  - id: work
    workspace: {type: worktree, branch: "{{ input }}"}
    script: touch here.txt
""",
    )
    result = swell("run", "escape", "--input", "..", cwd=repo)
    assert result.returncode == 1
    assert "worktree branch '..' must not contain '..'" in result.stdout
    assert not (isolated_state / "here.txt").exists()
    assert not (isolated_state.parent / "here.txt").exists()
