"""`swell bench make`: mutants some test catches become tasks whose gold patch resolves
them; the shipped dataset's repository is rebuilt offline with the same commits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench_helpers import TEST_COMMAND

from conftest import swell
from swell.bench.checkout import GIT_IDENTITY
from swell.bench.mutate import mutants

SOURCE = '''"""A tiny module to mutate."""


def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x


def window(items, size):
    return items[: size - 1] if size > 0 else []


def scaled(x, factor):
    return pow(x, factor)
'''

TESTS = """from mod import clamp, scaled, window


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0


def test_clamp_high():
    assert clamp(50, 0, 10) == 10


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_window():
    assert window([1, 2, 3, 4], 3) == [1, 2]


def test_scaled():
    assert scaled(2, 3) == 8
"""


def test_each_operator_changes_one_place_and_keeps_the_rest_as_written() -> None:
    found = {(m.operator, m.line, m.description) for m in mutants("mod.py", SOURCE)}
    assert ("flip_comparison", 5, "x < low -> x >= low") in found
    assert ("off_by_one", 13, "1 -> 2") in found
    assert ("remove_branch", 7, "if x > high: (removed)") in found
    assert ("swap_arguments", 17, "pow(...) first two arguments swapped") in found
    swapped = next(m for m in mutants("mod.py", SOURCE) if m.operator == "swap_arguments")
    assert swapped.mutated == SOURCE.replace("pow(x, factor)", "pow(factor, x)")
    removed = next(m for m in mutants("mod.py", SOURCE) if m.line == 7)
    assert "    pass\n    return x" in removed.mutated


def _git(repo: Path, *args: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo), **GIT_IDENTITY}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_make_writes_tasks_that_gold_resolves_and_empty_does_not(tmp_path: Path) -> None:
    repo = tmp_path / "mod"
    repo.mkdir()
    (repo / "mod.py").write_text(SOURCE)
    (repo / "test_mod.py").write_text(TESTS)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "mod")
    dataset = tmp_path / "mod.jsonl"
    made = swell(
        "bench",
        "make",
        str(repo),
        "-o",
        str(dataset),
        "--max-tasks",
        "4",
        "--test-command",
        TEST_COMMAND,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[-1] == f"wrote 4 tasks to {dataset}"
    tasks = [json.loads(line) for line in dataset.read_text().splitlines()]
    assert [t["instance_id"] for t in tasks] == ["mod-001", "mod-002", "mod-003", "mod-004"]
    every = {
        f"test_mod.py::test_{n}"
        for n in ("clamp_low", "clamp_high", "clamp_inside", "window", "scaled")
    }
    for task in tasks:
        assert set(task["FAIL_TO_PASS"]) | set(task["PASS_TO_PASS"]) == every
        assert not set(task["FAIL_TO_PASS"]) & set(task["PASS_TO_PASS"])
        assert task["problem_statement"].startswith(
            "These tests fail and should pass:\n- test_mod.py::"
        )
        assert task["patch"].startswith("diff --git a/mod.py b/mod.py")
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text("apiVersion: v1\nkind: WaveManifest\nmetadata: {name: p}\n")
    ran = swell("bench", "run", str(dataset), "-p", "gold", "-p", "empty", "-j", "2", cwd=project)
    assert ran.returncode == 0, ran.stderr
    assert "gold: resolved 4/4 = 100.0%" in ran.stdout
    assert "empty: resolved 0/4 = 0.0%" in ran.stdout


def test_make_refuses_a_directory_that_is_no_repository(tmp_path: Path) -> None:
    result = swell("bench", "make", str(tmp_path), "-o", str(tmp_path / "x.jsonl"), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == f"error: {tmp_path} is not a git repository with a commit\n"
