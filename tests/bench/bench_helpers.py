"""A tiny task repository for `swell bench` tests: `calc.py` has one function per task,
each task's base commit breaks its function, its gold patch mends it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from swell.bench.checkout import GIT_IDENTITY

# pytest without the environment's plugins: quick, and what the tests need
TEST_COMMAND = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {python} -m pytest -rA -q -p no:cacheprovider"


def _git(repo: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo), **GIT_IDENTITY}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _source(n: int, broken: int | None = None) -> str:
    lines = []
    for i in range(n):
        op = "-" if i == broken else "+"
        lines += [f"def f{i}(x):", f"    return x {op} {i + 1}", "", ""]
    return "\n".join(lines).rstrip() + "\n"


def _tests(n: int) -> str:
    lines = ["from calc import *", ""]
    for i in range(n):
        lines += ["", f"def test_f{i}():", f"    assert f{i}(10) == {10 + i + 1}", ""]
    return "\n".join(lines)


def tiny_dataset(where: Path, n: int = 3) -> Path:
    """A repository under `where` and a dataset of `n` tasks on it (repo relative)."""
    repo = where / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "calc.py").write_text(_source(n))
    (repo / "test_calc.py").write_text(_tests(n))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "good")
    good = _git(repo, "rev-parse", "HEAD")
    lines = []
    for i in range(n):
        _git(repo, "checkout", "-q", good)
        (repo / "calc.py").write_text(_source(n, broken=i))
        _git(repo, "commit", "-qam", f"break f{i}")
        base = _git(repo, "rev-parse", "HEAD")
        _git(repo, "tag", f"task-{i}")
        gold = _git(repo, "diff", base, good) + "\n"
        task = {
            "instance_id": f"calc-{i}",
            "repo": "repo",
            "base_commit": base,
            "problem_statement": f"f{i}(10) is not {10 + i + 1}",
            "FAIL_TO_PASS": [f"test_calc.py::test_f{i}"],
            "PASS_TO_PASS": [f"test_calc.py::test_f{j}" for j in range(n) if j != i],
            "test_command": TEST_COMMAND,
            "patch": gold,
        }
        lines.append(json.dumps(task))
    dataset = where / "tasks.jsonl"
    dataset.write_text("\n".join(lines) + "\n")
    return dataset


# a command step that applies the gold patch to tasks of even index (`half`), or
# applies it and breaks another function too (`break`)
FIXER = """
import json, os, subprocess, sys
mode, dataset, index = sys.argv[1], sys.argv[2], int(os.environ["INDEX"])
task = [json.loads(line) for line in open(dataset)][index]
if mode == "half" and index % 2:
    sys.exit(0)
subprocess.run(["git", "apply", "-"], input=task["patch"], text=True, check=True)
if mode == "break":
    other = (index + 1) % len(open(dataset).readlines())
    text = open("calc.py").read().replace(f"x + {other + 1}", f"x * {other + 1}")
    open("calc.py", "w").write(text)
if mode == "sleep":
    import time; time.sleep(1.5)
    hold = os.path.join(os.environ["SWELL_PROJECT_ROOT"], "hold")
    while index and os.path.exists(hold):  # every task but the first waits for the test
        time.sleep(0.05)
if mode == "cheat":  # the failing test made to pass, the code left broken
    text = open("test_calc.py").read().replace(f"assert f{index}(10)", f"assert 1 or f{index}(10)")
    subprocess.run(["git", "checkout", "--", "calc.py"], check=True)
    open("test_calc.py", "w").write(text)
if mode == "hang":
    import time; time.sleep(60)
"""


def bench_project(where: Path, dataset: Path) -> Path:
    """A swell project with pipelines `half`, `breaks`, `slow` and `hang` (FIXER's modes)."""
    project = where / "project"
    (project / ".agents" / "pipelines").mkdir(parents=True)
    (project / "wave.yaml").write_text(
        "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: bench-tests}\n"
    )
    (project / "fixer.py").write_text(FIXER)
    for name, mode in (
        ("half", "half"),
        ("breaks", "break"),
        ("slow", "sleep"),
        ("hang", "hang"),
        ("cheat", "cheat"),
    ):
        (project / ".agents" / "pipelines" / f"{name}.yaml").write_text(
            "kind: WavePipeline\n"
            f"metadata: {{name: {name}}}\n"
            "input: {type: string}\n"
            "steps:\n"
            "  - id: fix\n"
            "    type: command\n"
            "    script: INDEX={{ env.SWELL_BENCH_INDEX }} "
            f'python3 "$SWELL_PROJECT_ROOT/fixer.py" {mode} {dataset}\n'
        )
    return project
