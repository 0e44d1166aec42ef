"""The checkpoint stat cache (workspace/statcache.py, watch.py, treescan.py): what a
run's checkpoints know of a workspace gives git's tree after any sequence of edits,
looking only at the directories inotify says changed; a new process trusts the
hashes kept on disk and reads no file whose stat data is unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_checkpoint_objects import OLD_NS, age, git_tree

from swell.workspace.checkpoint import Checkpoints, Memory

NAMES = ["a", "b.log", "sub", "x y", "deep"]
paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map("/".join)
ops = st.one_of(
    st.tuples(st.just("write"), paths, st.binary(max_size=20)),
    st.tuples(st.just("append"), paths, st.just(b"+")),
    st.tuples(st.just("remove"), paths, st.just(b"")),
    st.tuples(st.just("move"), paths, paths.map(str.encode)),
    st.tuples(st.just("chmod"), paths, st.just(b"")),
    st.tuples(
        st.just("ignore"), st.sampled_from(["", "sub"]), st.sampled_from([b"*.log", b"deep/"])
    ),
    st.tuples(st.just("mkdir"), paths, st.just(b"")),
)


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return {**os.environ}


def apply(root: Path, op: tuple[str, str, bytes]) -> None:
    """One edit of the workspace; an edit that makes no sense there does nothing."""
    kind, rel, data = op
    path = root / rel
    try:
        if kind in ("write", "append"):
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab" if kind == "append" else "wb") as f:
                f.write(data)
        elif kind == "remove":
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        elif kind == "move":
            target = root / data.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, target)
        elif kind == "chmod":
            path.chmod(path.stat().st_mode ^ 0o100)
        elif kind == "ignore":
            path.mkdir(parents=True, exist_ok=True)
            with open(path / ".gitignore", "ab") as f:
                f.write(data + b"\n")
        else:
            path.mkdir(parents=True)
    except OSError:
        pass


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(first=st.lists(ops, max_size=6), edits=st.lists(ops, min_size=1, max_size=8))
def test_a_watched_workspace_gives_gits_tree_after_any_edits(
    tmp_path: Path,
    git_env: dict[str, str],
    first: list[tuple[str, str, bytes]],
    edits: list[tuple[str, str, bytes]],
) -> None:
    for made in ("ours.git", "theirs.git", "ws"):
        shutil.rmtree(tmp_path / made, ignore_errors=True)
    (tmp_path / "ours.index").with_suffix(".stat").unlink(missing_ok=True)
    root = tmp_path / "ws"
    root.mkdir()
    ours = Checkpoints(tmp_path / "ours.git", Memory(watch_from=0))  # one run: one Memory
    theirs = Checkpoints(tmp_path / "theirs.git")
    ours.ensure()
    theirs.ensure()
    for op in first:
        apply(root, op)
    index = tmp_path / "ours.index"
    assert ours.write_tree(root, index) == git_tree(theirs.repo, root, tmp_path / "i", git_env)
    for op in edits:
        apply(root, op)
        expected = git_tree(theirs.repo, root, tmp_path / "i", git_env)
        assert ours.write_tree(root, index) == expected, op
    # a new process: the hashes on disk, a full scan, the same tree
    again = Checkpoints(tmp_path / "ours.git", Memory(watch_from=0))
    assert again.write_tree(root, index) == expected


WATCH_READS = """
import sys
from pathlib import Path
from swell.workspace.checkpoint import Checkpoints, Memory

root, repo, index = (Path(a) for a in sys.argv[1:4])
opened = []
sys.addaudithook(lambda ev, args: ev == "open" and opened.append(str(args[0])))
tree = Checkpoints(repo, Memory()).write_tree(root, index)
print(tree)
print(sorted(p[len(str(root)) + 1 :] for p in opened if p.startswith(str(root) + "/")))
"""


def test_a_new_process_reads_only_the_files_whose_stat_data_changed(
    tmp_path: Path, git_env: dict[str, str]
) -> None:
    root = tmp_path / "ws"
    for i in range(30):
        (root / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"d{i % 3}" / f"f{i}.txt").write_text(f"file {i}\n")
    age(root)  # older than their hashing: their stat data is trusted
    repo, index = tmp_path / "cp.git", tmp_path / "run" / "checkpoint" / "main.index"
    Checkpoints(repo).ensure()
    script = tmp_path / "reads.py"
    script.write_text(textwrap.dedent(WATCH_READS))

    def new_process() -> tuple[str, list[str]]:
        out = subprocess.run(
            [sys.executable, str(script), str(root), str(repo), str(index)],
            capture_output=True,
            text=True,
            check=True,
            env=git_env,
        ).stdout.splitlines()
        return out[0], eval(out[1])

    first, read = new_process()
    assert len(read) == 30  # nothing known yet: every file read once
    assert index.with_suffix(".stat").is_file()
    assert new_process() == (first, [])
    # a torn last line (a process killed while appending) is dropped, the rest trusted
    with open(index.with_suffix(".stat"), "a") as f:
        f.write("0123456789012345678901234567890123456789 1 5 5 9 9 33188 d1/f4")
    assert new_process() == (first, [])
    (root / "d1" / "f4.txt").write_text("changed\n")
    os.utime(root / "d1" / "f4.txt", ns=(OLD_NS + 5, OLD_NS + 5))
    tree, read = new_process()
    assert read == ["d1/f4.txt"]
    assert tree == git_tree(repo, root, tmp_path / "i", git_env) != first
