"""Every file operation swell makes on a workspace (and on its own run directory, which
steps can reach) refuses to follow a symbolic link out of it: read-only mounts,
injected artifacts, collected artifacts, logs, worktrees and git's view of a workspace.

Each test plants what a step could leave behind and checks that nothing outside the
workspace was read, written or had its mode changed."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from swell.engine.loop.state import RunState
from swell.engine.visit.execute import inject_artifacts
from swell.events import models as ev
from swell.manifest.models import ArtifactDef, Mount, Step
from swell.workspace import safe
from swell.workspace.artifacts import collect, write_log
from swell.workspace.workspace import (
    WorkspaceError,
    add_mounts,
    open_directory,
    open_worktree,
    restore_mounts,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A directory outside every workspace with a read-only 'secret' in it."""
    where = tmp_path / "outside"
    where.mkdir()
    secret = where / "id_rsa"
    secret.write_text("-----BEGIN PRIVATE KEY-----\n")
    secret.chmod(0o400)
    (where / ".bashrc").write_text("# mine\n")  # writable: a write through a link would land
    where.chmod(0o555)
    yield where
    where.chmod(0o755)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "spec.md").write_text("the spec\n")
    (root / "specs" / "v1.md").write_text("one\n")
    (root / "specs" / "v2.md").write_text("two\n")
    os.symlink("v1.md", root / "specs" / "current.md")
    (root / "notes.md").write_text("notes\n")
    return root


def _swap_for_link(path: Path, target: Path) -> None:
    """What a step does: make the (read-only) entry writable and replace it by a link."""
    path.parent.chmod(_mode(path.parent) | 0o200)
    if path.is_dir() and not path.is_symlink():
        subprocess.run(["chmod", "-R", "u+w", str(path)], check=True)
        subprocess.run(["rm", "-rf", str(path)], check=True)
    else:
        path.unlink()
    os.symlink(target, path)


# ------------------------------------------------------------------ read-only mounts


def test_restoring_a_file_mount_replaced_by_a_link_leaves_the_target_alone(
    tmp_path: Path, project: Path, outside: Path
) -> None:
    ws = open_directory(tmp_path / "ws")
    add_mounts(ws, project, [Mount(source="./notes.md", mode="readonly")])
    _swap_for_link(ws.path / "notes.md", outside / "id_rsa")
    assert ws.check_mounts()
    restore_mounts(ws, project)
    assert _mode(outside / "id_rsa") == 0o400  # chmod did not follow the link
    restored = ws.path / "notes.md"
    assert not restored.is_symlink() and restored.read_text() == "notes\n"
    assert not ws.check_mounts()


def test_restoring_a_directory_mount_replaced_by_a_link_leaves_the_target_alone(
    tmp_path: Path, project: Path, outside: Path
) -> None:
    ws = open_directory(tmp_path / "ws")
    add_mounts(ws, project, [Mount(source="./specs", target="/specs", mode="readonly")])
    _swap_for_link(ws.path / "specs", outside)
    assert ws.check_mounts()
    restore_mounts(ws, project)
    assert _mode(outside / "id_rsa") == 0o400 and _mode(outside) == 0o555
    assert not (ws.path / "specs").is_symlink()
    assert (ws.path / "specs" / "spec.md").read_text() == "the spec\n"


def test_a_retargeted_link_in_a_read_only_mount_is_a_change(tmp_path: Path, project: Path) -> None:
    ws = open_directory(tmp_path / "ws")
    add_mounts(ws, project, [Mount(source="./specs", mode="readonly")])
    link = ws.path / "specs" / "current.md"
    (ws.path / "specs").chmod(0o755)
    link.unlink()
    os.symlink("v2.md", link)
    assert ws.check_mounts() == ["the step wrote to the read-only mount specs/; it was restored"]
    restore_mounts(ws, project)
    assert os.readlink(ws.path / "specs" / "current.md") == "v1.md"


def test_a_mount_target_that_is_a_link_is_replaced_by_a_copy(tmp_path: Path, project: Path) -> None:
    ws = open_directory(tmp_path / "ws")
    (ws.path / "mine.txt").write_text("keep me writable\n")
    os.symlink(".", ws.path / "specs")  # a link back to the workspace itself
    add_mounts(ws, project, [Mount(source="./specs", mode="readonly")])
    assert not (ws.path / "specs").is_symlink()
    assert (ws.path / "specs" / "spec.md").read_text() == "the spec\n"
    assert _mode(ws.path / "mine.txt") & 0o200  # the workspace was not made read-only
    assert _mode(ws.path) & 0o200


def test_a_mount_target_linked_outside_is_refused_with_a_clear_error(
    tmp_path: Path, project: Path, outside: Path
) -> None:
    ws = open_directory(tmp_path / "ws")
    (ws.path / "deep").symlink_to(outside)
    with pytest.raises(WorkspaceError, match="escapes the workspace"):
        add_mounts(ws, project, [Mount(source="./specs", target="/deep/specs", mode="readonly")])
    assert sorted(p.name for p in outside.iterdir()) == [".bashrc", "id_rsa"]


# --------------------------------------------------------------- injected artifacts


def _state_with(path: Path, data: bytes, step: str = "plan", name: str = "plan") -> RunState:
    state = RunState("r1")
    state.apply(
        ev.ArtifactWritten(
            step_id=step,
            visit=1,
            name=name,
            path=str(path),
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
        )
    )
    return state


def _consumer() -> Step:
    return Step.model_validate(
        {
            "id": "build",
            "type": "command",
            "script": "true",
            "memory": {
                "inject_artifacts": [{"step": "plan", "artifact": "plan", "as": "the_plan"}]
            },
        }
    )


def test_an_artifact_replaced_by_a_link_is_not_injected(tmp_path: Path, outside: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "out").mkdir(parents=True)
    produced = ws / "out" / "plan.md"
    produced.write_text("the plan\n")
    state = _state_with(produced, b"the plan\n")
    produced.unlink()
    os.symlink(outside / "id_rsa", produced)  # a later step swapped it for a link
    injected, problems = inject_artifacts(state, _consumer(), ws)
    assert injected == {}
    assert problems == [
        f"input artifact 'plan' of step 'plan' ({produced}) was replaced by a symbolic link "
        "after it was written; not injecting it"
    ]
    copy = ws / ".wave" / "artifacts" / "the_plan"
    assert not copy.exists()


def test_an_artifact_changed_after_it_was_written_is_not_injected(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    produced = ws / "plan.md"
    produced.write_text("the plan\n")
    state = _state_with(produced, b"the plan\n")
    produced.write_text("someone else's plan\n")
    injected, problems = inject_artifacts(state, _consumer(), ws)
    assert injected == {}
    assert len(problems) == 1
    assert problems[0].startswith(
        f"input artifact 'plan' of step 'plan' ({produced}) changed after it was written"
    )
    assert not (ws / ".wave" / "artifacts" / "the_plan").exists()


def test_an_injected_copy_replaces_a_link_instead_of_writing_through_it(
    tmp_path: Path, outside: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / ".wave" / "artifacts").mkdir(parents=True)
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("print('mine')\n")
    produced = ws / "plan.md"
    produced.write_text("the plan\n")
    state = _state_with(produced, b"the plan\n")
    os.symlink("../../src/main.py", ws / ".wave" / "artifacts" / "the_plan")
    injected, problems = inject_artifacts(state, _consumer(), ws)
    assert problems == []
    copy = ws / ".wave" / "artifacts" / "the_plan"
    assert injected == {"the_plan": str(copy)}
    assert not copy.is_symlink() and copy.read_text() == "the plan\n"
    assert (ws / "src" / "main.py").read_text() == "print('mine')\n"

    # the same with a link out of the workspace: replaced, the target untouched
    copy.unlink()
    os.symlink(outside / ".bashrc", copy)
    injected, problems = inject_artifacts(state, _consumer(), ws)
    assert problems == [] and copy.read_text() == "the plan\n" and not copy.is_symlink()
    assert (outside / ".bashrc").read_text() == "# mine\n"


def test_the_injection_directory_linked_outside_is_refused(tmp_path: Path, outside: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    produced = ws / "plan.md"
    produced.write_text("the plan\n")
    state = _state_with(produced, b"the plan\n")
    os.symlink(outside, ws / ".wave")
    injected, problems = inject_artifacts(state, _consumer(), ws)
    assert injected == {} and len(problems) == 1
    assert "escapes the workspace" in problems[0]
    assert sorted(p.name for p in outside.iterdir()) == [".bashrc", "id_rsa"]


def test_sha256_of_artifacts_is_part_of_the_run_state() -> None:
    state = _state_with(Path("/w/plan.md"), b"x")
    assert state.artifacts == {"plan": {"plan": "/w/plan.md"}}
    assert state.artifact_sha256 == {"plan": {"plan": hashlib.sha256(b"x").hexdigest()}}


# ------------------------------------------------------------ collected artifacts, logs


def test_collecting_from_a_link_out_of_the_workspace_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(outside / "id_rsa", ws / "report.md")
    found, problems = collect(ws, [ArtifactDef(name="report", path="report.md")], None)
    assert found == [] and problems == ["artifact 'report': path 'report.md' escapes the workspace"]


def test_a_stdout_artifact_replaces_a_link_at_its_path(tmp_path: Path, outside: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "src.py").write_text("code\n")
    os.symlink("src.py", ws / "answer.md")
    found, problems = collect(
        ws, [ArtifactDef(name="answer", path="answer.md", source="stdout")], "the answer\n"
    )
    assert problems == [] and [a.name for a in found] == ["answer"]
    assert not (ws / "answer.md").is_symlink()
    assert (ws / "answer.md").read_text() == "the answer\n"
    assert (ws / "src.py").read_text() == "code\n"
    assert found[0].sha256 == hashlib.sha256(b"the answer\n").hexdigest()


def test_a_log_path_planted_as_a_link_is_replaced(tmp_path: Path, outside: Path) -> None:
    run_dir = tmp_path / "runs" / "r1"
    (run_dir / "next").mkdir(parents=True)
    os.symlink(outside / ".bashrc", run_dir / "next" / "1.log")
    log = write_log(run_dir, "next", 1, "output\n", "")
    assert log is not None
    assert (outside / ".bashrc").read_text() == "# mine\n"
    assert not (run_dir / "next" / "1.log").is_symlink()
    assert (run_dir / "next" / "1.log").read_text() == "output\n"


def test_a_log_directory_planted_as_a_link_out_of_the_run_is_refused(
    tmp_path: Path, outside: Path
) -> None:
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    os.symlink(outside, run_dir / "next")
    with pytest.raises(safe.UnsafePath, match="escapes"):
        write_log(run_dir, "next", 1, "output\n", "")
    assert sorted(p.name for p in outside.iterdir()) == [".bashrc", "id_rsa"]


def test_writes_never_follow_the_final_link(tmp_path: Path, outside: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    os.symlink(outside / ".bashrc", base / "file")
    safe.write_bytes(base, "file", b"new")
    assert (base / "file").read_bytes() == b"new" and not (base / "file").is_symlink()
    assert (outside / ".bashrc").read_text() == "# mine\n"
    with pytest.raises(safe.UnsafePath, match="is a symbolic link"):
        os.symlink(outside / "id_rsa", base / "link")
        safe.digest_file(base / "link")


# -------------------------------------------------------------------- git and worktrees


def _git(cwd: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    ).stdout


def test_git_config_planted_in_a_workspace_runs_nothing_when_swell_diffs(tmp_path: Path) -> None:
    ws = open_directory(tmp_path / "ws")
    ran = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {ran}\ncat\n")
    hook.chmod(0o755)
    (ws.path / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (ws.path / "a.txt").write_text("hello\n")
    with (ws.path / ".git" / "config").open("a") as fh:
        fh.write(
            f'[core]\n\tfsmonitor = "{hook}"\n'
            f'[filter "evil"]\n\tclean = "{hook}"\n\tprocess = "{hook}"\n\trequired = true\n'
            f'[diff "evil"]\n\ttextconv = "{hook}"\n\tcommand = "{hook}"\n'
        )
    nested = ws.path / "sub"  # a repository of the step's own, configured the same way
    nested.mkdir()
    _git(nested, "init", "-q")
    (nested / "b.txt").write_text("b\n")
    _git(nested, "add", "b.txt")
    _git(nested, "commit", "-q", "-m", "b")
    (nested / ".gitattributes").write_text("* filter=evil\n")
    (nested / "b.txt").write_text("changed\n")
    with (nested / ".git" / "config").open("a") as fh:
        fh.write(f'[core]\n\tfsmonitor = "{hook}"\n[filter "evil"]\n\tclean = "{hook}"\n')
    assert "+hello" in ws.diff()
    assert sorted(ws.changed_files()) == [".gitattributes", "a.txt", "sub"]
    assert not ran.exists()


def test_git_never_works_on_a_repository_or_tree_outside_the_workspace(
    tmp_path: Path, outside: Path
) -> None:
    ws = open_directory(tmp_path / "ws")
    (ws.path / "a.txt").write_text("hello\n")
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    _git(other, "commit", "-q", "--allow-empty", "-m", "theirs")
    _git(ws.path, "config", "core.worktree", str(outside))  # git would read outside files
    assert ws.changed_files() == ["a.txt"]
    assert "id_rsa" not in ws.diff()
    git_dir = ws.path / ".git"
    subprocess.run(["rm", "-rf", str(git_dir)], check=True)
    os.symlink(other / ".git", git_dir)  # git would change another repository's index
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.changed_files()
    with pytest.raises(WorkspaceError, match="symbolic link"):
        open_directory(ws.path)
    assert _git(other, "status", "--porcelain") == ""


def test_a_worktree_path_planted_as_a_link_is_refused(tmp_path: Path, outside: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "f.txt").write_text("x\n")
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "initial")
    root = tmp_path / "ws"
    (root / "worktrees").mkdir(parents=True)
    os.symlink(outside, root / "worktrees" / "feature-x")
    (root / "worktrees" / "feature-x.json").write_text('{"base": "HEAD", "branch": "feature/x"}')
    with pytest.raises(WorkspaceError, match="not a worktree swell created"):
        open_worktree(project, root, "feature/x", None)

    # a metadata file planted as a link is replaced, never written through
    (root / "worktrees" / "feature-x").unlink()
    (root / "worktrees" / "feature-x.json").unlink()
    os.symlink(outside / ".bashrc", root / "worktrees" / "feature-x.json")
    ws = open_worktree(project, root, "feature/x", None)
    assert (outside / ".bashrc").read_text() == "# mine\n"
    assert not (root / "worktrees" / "feature-x.json").is_symlink()
    assert ws.path == root / "worktrees" / "feature-x" and (ws.path / "f.txt").exists()
    assert open_worktree(project, root, "feature/x", None).base == ws.base  # reused


def test_codex_session_files_planted_by_a_step_neither_hang_nor_loop(tmp_path: Path) -> None:
    """A step (Codex itself) can write under CODEX_HOME: a FIFO named like the thread's
    session file used to block the adapter's `open`, and a link loop under sessions/
    sent the recursive glob round it. The real file still counts."""
    import threading

    from swell.adapters.codex import thread_total

    day = tmp_path / "sessions" / "2026" / "11" / "27"
    day.mkdir(parents=True)
    line = {"type": "event_msg", "payload": {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 7, "output_tokens": 3}}}}  # fmt: skip
    (day / "rollout-1-T1.jsonl").write_text(json.dumps(line) + "\n")
    os.mkfifo(day / "rollout-2-T1.jsonl")
    (day / "rollout-3-T1.jsonl").symlink_to("/dev/zero")
    for name in ("a", "b"):
        (tmp_path / "sessions" / name).symlink_to(tmp_path / "sessions")
    result: list[dict[str, int]] = []
    worker = threading.Thread(target=lambda: result.append(thread_total(tmp_path, "T1")))
    worker.daemon = True
    worker.start()
    worker.join(20)
    assert result, "thread_total hung"
    assert result[0]["input_tokens"] == 7 and result[0]["output_tokens"] == 3
