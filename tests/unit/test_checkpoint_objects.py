"""Checkpoints written in process (workspace/treescan.py, gitobjects.py) are git's own:
for random file trees, random edits and random .gitignore files, the tree id written
without git equals `git add --all` + `git write-tree`'s through a fresh index, git
reads every object back (`git fsck`), and a checkpoint's commit is `commit-tree`'s.
What the in-process path cannot match goes to git and still gives git's tree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swell.workspace.checkpoint import Checkpoints
from swell.workspace.gitobjects import writer
from swell.workspace.treescan import Fallback, StatCache, write_tree

NAMES = ["a", "b.log", "keep.log", "sub", "x y", "é", "build", "a.b", "Z", "a-"]
PATTERNS = [
    "*.log",
    "!keep.log",
    "sub/",
    "/a",
    "**/b.log",
    "sub/**",
    "build",
    "a/**/Z",
    "# comment",
    "",
    "x?y",
    "*.b/",
    "é",
    "trailing   ",
]
OLD_NS = 1_000_000_000_000_000_000  # 2001: an mtime the stat cache trusts

paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)
files = st.dictionaries(
    paths,
    st.tuples(st.sampled_from(["file", "exec", "link"]), st.binary(max_size=40)),
    max_size=12,
)
ignore_files = st.dictionaries(
    st.sampled_from(["", "sub", "sub/sub"]), st.lists(st.sampled_from(PATTERNS), max_size=5)
)


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """No global git config or excludes: git and the in-process path see the same rules."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return {**os.environ}


def lay_out(root: Path, tree: dict[str, tuple[str, bytes]], ignores: dict[str, list[str]]) -> None:
    """Make `root` hold exactly these files (a path under a file is left out)."""
    subprocess.run(["rm", "-rf", str(root)], check=True)
    root.mkdir()
    for rel, (kind, data) in sorted(tree.items()):
        path = root / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            continue
        if path.exists() or path.is_symlink():
            continue
        if kind == "link":
            path.symlink_to(data.hex() or "nowhere")
        else:
            path.write_bytes(data)
            if kind == "exec":
                path.chmod(0o755)
    for folder, lines in ignores.items():
        where = root / folder
        if where.is_dir() and not where.is_symlink():
            (where / ".gitignore").write_text("\n".join(lines) + "\n")


def age(root: Path) -> None:
    """Give every file an old mtime, so the stat cache trusts it next time."""
    for path in root.rglob("*"):
        os.utime(path, ns=(OLD_NS, OLD_NS), follow_symlinks=False)


def git_tree(repo: Path, root: Path, index: Path, env: dict[str, str]) -> str:
    index.unlink(missing_ok=True)
    run = {**env, "GIT_INDEX_FILE": str(index)}
    where = ["git", "--git-dir", str(repo), "--work-tree", str(root)]
    subprocess.run(
        [*where, "add", "--all", "."], cwd=root, env=run, check=True, capture_output=True
    )
    out = subprocess.run([*where, "write-tree"], cwd=root, env=run, check=True, capture_output=True)
    return out.stdout.decode().strip()


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(before=files, after=files, keep=st.booleans(), ignores=ignore_files, aged=st.booleans())
def test_an_in_process_tree_is_gits_write_tree(
    tmp_path: Path,
    git_env: dict[str, str],
    before: dict[str, tuple[str, bytes]],
    after: dict[str, tuple[str, bytes]],
    keep: bool,
    ignores: dict[str, list[str]],
    aged: bool,
) -> None:
    ours, theirs = Checkpoints(tmp_path / "ours.git"), Checkpoints(tmp_path / "theirs.git")
    for repo in (ours, theirs):
        if not (repo.repo / "HEAD").exists():
            repo.ensure()
    root, index = tmp_path / "ws", tmp_path / "index"
    cache = StatCache()
    lay_out(root, before, ignores)
    if aged:
        age(root)
    first = write_tree(root, cache, writer(ours.repo), ())
    assert first == git_tree(theirs.repo, root, index, git_env)
    # a random edit: some files kept (same stat data), others changed, added, removed
    edited = {**before, **after} if keep else after
    lay_out(root, edited, ignores) if not keep else _apply(root, before, after)
    second = write_tree(root, cache, writer(ours.repo), ())
    assert second == git_tree(theirs.repo, root, index, git_env)
    fsck = subprocess.run(
        ["git", "--git-dir", str(ours.repo), "fsck", "--strict", "--no-dangling"],
        capture_output=True,
        text=True,
        env=git_env,
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def _apply(
    root: Path, before: dict[str, tuple[str, bytes]], after: dict[str, tuple[str, bytes]]
) -> None:
    """Edit in place: files of `after` rewritten (same size when they can be), the
    rest of `before` left with their stat data."""
    for rel, (kind, data) in after.items():
        path = root / rel
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            continue
        if kind == "link":
            path.symlink_to(data.hex() or "nowhere")
        else:
            path.write_bytes(data)
            path.chmod(0o755 if kind == "exec" else 0o644)
    if before:
        victim = root / sorted(before)[0]
        if victim.is_file() or victim.is_symlink():
            victim.unlink()


def test_a_checkpoint_commit_is_commit_trees(tmp_path: Path, git_env: dict[str, str]) -> None:
    repo = Checkpoints(tmp_path / "cp.git")
    repo.ensure()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("one\n")
    first = repo.snapshot(
        ws, tmp_path / "i", refs=["refs/swell/r/s/1"], message="m 1", parent=None, parent_tree=None
    )
    (ws / "f.txt").write_text("two\n")
    second = repo.snapshot(
        ws,
        tmp_path / "i",
        refs=["refs/swell/r/s/2"],
        message="swell: s visit 2",
        parent=first.commit,
        parent_tree=first.tree,
    )
    made = repo.git("commit-tree", second.tree, "-p", first.commit, "-m", "swell: s visit 2")
    assert second.commit == made.strip()
    log = subprocess.run(
        ["git", "--git-dir", str(repo.repo), "log", "--format=%H %s", "refs/swell/r/s/2"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert log == [f"{second.commit} swell: s visit 2", f"{first.commit} m 1"]
    assert repo.resolve("refs/swell/r/s/2") == second.commit
    assert repo.tree_of(second.commit) == second.tree


@pytest.mark.parametrize("unusual", ["attributes", "nested repository", "escaped pattern"])
def test_what_only_git_handles_is_checkpointed_by_git(
    tmp_path: Path, git_env: dict[str, str], unusual: str
) -> None:
    repo = Checkpoints(tmp_path / "cp.git")
    repo.ensure()
    ws = tmp_path / "ws"
    (ws / "lib").mkdir(parents=True)
    (ws / "lib" / "a.txt").write_text("crlf\r\n")
    if unusual == "attributes":
        (ws / ".gitattributes").write_text("* text=auto\n")
    elif unusual == "nested repository":
        subprocess.run(["git", "init", "-q", str(ws / "lib")], check=True, env=git_env)
        who = ["-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(
            ["git", "-C", str(ws / "lib"), *who, "commit", "-q", "--allow-empty", "-m", "x"],
            check=True,
            env=git_env,
        )
    else:
        (ws / ".gitignore").write_text("\\#a.txt\n[ab].txt\n")
    with pytest.raises(Fallback):
        write_tree(ws, StatCache(), writer(repo.repo), ())
    theirs = Checkpoints(tmp_path / "theirs.git")
    theirs.ensure()
    assert repo.write_tree(ws, tmp_path / "index") == git_tree(
        theirs.repo, ws, tmp_path / "i2", git_env
    )


def test_a_small_workspace_is_checkpointed_without_a_git_process(
    tmp_path: Path, git_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Checkpoints(tmp_path / "cp.git")
    repo.ensure()
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("print(1)\n")
    (ws / ".gitignore").write_text("*.log\n")
    calls = tmp_path / "git-calls"
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    snap = repo.snapshot(
        ws, tmp_path / "i", refs=["refs/swell/r/w/1"], message="m", parent=None, parent_tree=None
    )
    for n in range(3):
        (ws / "work.txt").write_text("change\n" * (n + 1))
        (ws / "build.log").write_text(f"{n}\n")
        snap = repo.snapshot(
            ws,
            tmp_path / "i",
            refs=[f"refs/swell/r/w/{n + 2}"],
            message=f"visit {n + 2}",
            parent=snap.commit,
            parent_tree=snap.tree,
        )
        assert snap.changed
    assert not calls.exists()
    monkeypatch.undo()
    listed = subprocess.run(
        ["git", "--git-dir", str(repo.repo), "ls-tree", "-r", "--name-only", "refs/swell/r/w/4"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert listed == [".gitignore", "src/a.py", "work.txt"]
