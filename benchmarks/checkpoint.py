"""What a checkpoint per visit costs (docs/time-travel.md).

Two measurements, each against a baseline measured in the same run:

- loop: `swell run` of a command loop of VISITS visits (default 3,000), once with
  checkpoints off (SWELL_CHECKPOINTS=off, the baseline) and once on; the difference
  per visit is the overhead. Two workloads: `unchanged` (each visit writes nothing)
  and `changed` (each visit appends a line to a file). Disk per visit is the size of
  the checkpoint repository over the visits.
- big workspace: one checkpoint of a workspace of FILES files (default 10,000),
  measured directly (`Checkpoints.snapshot`, as after each visit), when nothing
  changed and when a few files changed; its baseline is the floor of any
  checkpoint, one `git` process doing nothing (`git --version`). Wall time and the
  CPU time of the git processes are both given: on a loaded machine the wall time is
  mostly waiting for a core.

- small workspace: checkpoints of a workspace of SMALL_FILES files (default 50, in
  5 folders), each after appending a line to one file, measured directly: what a
  visit that changed a little costs (in process, no git process); the baseline is
  the same floor, one `git --version`.

The goal: at most 5 ms a visit when nothing changed. Absolute times are not asserted;
the script exits non-zero only when a run did not do what it should.
CHECKPOINT_BENCH_VISITS, CHECKPOINT_BENCH_FILES and CHECKPOINT_BENCH_ROUNDS change
the sizes and the number of rounds (the minimum of the rounds is reported).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from swell.workspace.checkpoint import Checkpoints  # noqa: E402

VISITS = int(os.environ.get("CHECKPOINT_BENCH_VISITS", "3000"))
FILES = int(os.environ.get("CHECKPOINT_BENCH_FILES", "10000"))
ROUNDS = int(os.environ.get("CHECKPOINT_BENCH_ROUNDS", "1"))
GOAL_MS = 5.0
CHANGED_FILES = 5
SMALL_FILES = int(os.environ.get("CHECKPOINT_BENCH_SMALL_FILES", "50"))


def pipeline(visits: int, write: bool) -> str:
    change = "      echo change >> work.txt\n" if write else ""
    return f"""kind: WavePipeline
metadata: {{name: cp}}
max_step_visits: {visits + 10}
steps:
  - id: work
    max_visits: {visits}
    script: |
{change}      prev={{{{ context.n }}}}
      echo "{{\\"n\\": $(( ${{prev:-0}} + 1 ))}}"
    output:
      context:
        n: "{{{{ n }}}}"
    edges:
      - {{target: _complete, condition: context.n={visits}}}
      - {{target: work}}
"""


def project(base: Path, write: bool) -> Path:
    root = Path(tempfile.mkdtemp(dir=base))
    (root / "wave.yaml").write_text("kind: WaveManifest\nmetadata: {name: bench}\n")
    pipes = root / ".agents" / "pipelines"
    pipes.mkdir(parents=True)
    (pipes / "cp.yaml").write_text(pipeline(VISITS, write))
    return root


def run_loop(base: Path, write: bool, checkpoints: bool) -> tuple[float, int]:
    """Seconds of one `swell run` of the loop, and the checkpoint repository's bytes."""
    root = project(base, write)
    state = root / ".swell"
    env = {**os.environ, "PYTHONPATH": str(SRC), "SWELL_STATE_DIR": str(state)}
    env["SWELL_CHECKPOINTS"] = "on" if checkpoints else "off"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "swell", "run", "cp", "-o", "quiet"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    took = time.perf_counter() - started
    listed = subprocess.run(
        [sys.executable, "-m", "swell", "list", "-o", "json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    runs = json.loads(listed.stdout or "[]")
    if done.returncode != 0 or not runs or runs[0]["visits"] != VISITS:
        sys.exit(f"the loop did not run {VISITS} visits: {done.stdout}{done.stderr}")
    repo = state / "checkpoints.git"
    size = sum(f.stat().st_size for f in repo.rglob("*") if f.is_file()) if repo.is_dir() else 0
    shutil.rmtree(root, ignore_errors=True)
    return took, size


def git_floor(count: int) -> float:
    """Wall ms of one `git --version`: the least a checkpoint made by git costs."""
    t0 = time.perf_counter()
    for _ in range(count):
        subprocess.run(["git", "--version"], capture_output=True, check=True)
    return (time.perf_counter() - t0) / count * 1000


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def big_workspace(base: Path, count: int) -> tuple[float, float, float, float, float, int]:
    """Per checkpoint: wall and CPU ms unchanged, wall and CPU ms with a few files
    changed, the floor's wall ms, and the repository's bytes after the changes."""
    ws = base / "big"
    for i in range(FILES):
        folder = ws / f"d{i % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    repo = Checkpoints(base / "big.git")
    repo.ensure()
    index = base / "big.index"
    snap = repo.snapshot(
        ws, index, refs=["refs/swell/b/tip/main"], message="m", parent=None, parent_tree=None
    )
    time.sleep(1.1)  # files older than the index: git trusts their stat data (no racy re-reads)
    snap = repo.snapshot(
        ws,
        index,
        refs=["refs/swell/b/tip/main"],
        message="m",
        parent=snap.commit,
        parent_tree=snap.tree,
    )

    def timed(change: bool) -> tuple[float, float]:
        nonlocal snap
        wall = used = 0.0
        for n in range(count):
            if change:
                for k in range(CHANGED_FILES):
                    (ws / f"d{k}" / f"f{k}.txt").write_text(f"changed {n}\n")
            c0, t0 = cpu(), time.perf_counter()
            snap = repo.snapshot(
                ws,
                index,
                refs=["refs/swell/b/tip/main"],
                message="m",
                parent=snap.commit,
                parent_tree=snap.tree,
            )
            wall += time.perf_counter() - t0
            used += cpu() - c0
            if snap.changed != change:
                sys.exit(f"a checkpoint said changed={snap.changed}, expected {change}")
        return wall / count * 1000, used / count * 1000

    unchanged = timed(False)
    changed = timed(True)
    floor = git_floor(count)
    size = sum(f.stat().st_size for f in repo.repo.rglob("*") if f.is_file())
    return *unchanged, *changed, floor, size


def small_workspace(base: Path, count: int) -> tuple[float, float]:
    """Wall ms per checkpoint of a small workspace with one file appended to each
    time, and how many git processes those checkpoints started (counted by a `git`
    first on PATH that logs and hands on)."""
    ws = base / "small"
    for i in range(SMALL_FILES):
        folder = ws / f"d{i % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    shim = base / "shim"
    shim.mkdir()
    real = shutil.which("git") or "git"
    log = base / "git-calls"
    (shim / "git").write_text(f'#!/bin/sh\necho x >> {log}\nexec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    repo = Checkpoints(base / "small.git")
    repo.ensure()
    index = base / "small.index"
    snap = repo.snapshot(
        ws, index, refs=["refs/swell/s/tip/main"], message="m", parent=None, parent_tree=None
    )
    path = os.environ["PATH"]
    os.environ["PATH"] = f"{shim}{os.pathsep}{path}"
    wall = 0.0
    try:
        for n in range(count):
            with open(ws / "d0" / "f0.txt", "a") as f:
                f.write(f"change {n}\n")
            t0 = time.perf_counter()
            snap = repo.snapshot(
                ws,
                index,
                refs=[f"refs/swell/s/work/{n}", "refs/swell/s/tip/main"],
                message=f"swell: work visit {n}",
                parent=snap.commit,
                parent_tree=snap.tree,
            )
            wall += time.perf_counter() - t0
            if not snap.changed:
                sys.exit("a checkpoint after a change said changed=False")
    finally:
        os.environ["PATH"] = path
    calls = len(log.read_text().splitlines()) if log.exists() else 0
    return wall / count * 1000, calls


def verdict(ms: float) -> str:
    return "PASS" if ms <= GOAL_MS else "FAIL"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(f"loop of {VISITS} visits, {ROUNDS} round(s); minimum of the rounds")
        for write in (False, True):
            name = "changed" if write else "unchanged"
            off = min(run_loop(base, write, False)[0] for _ in range(ROUNDS))
            on_runs = [run_loop(base, write, True) for _ in range(ROUNDS)]
            on, size = min(r[0] for r in on_runs), on_runs[0][1]
            per = (on - off) / VISITS * 1000
            print(
                f"  {name:<9} off {off:7.2f} s  on {on:7.2f} s  ratio {on / off:5.2f}x  "
                f"overhead {per:6.2f} ms/visit  disk {size / VISITS:8.0f} B/visit"
            )
            if not write:
                print(
                    f"checkpoint overhead per unchanged visit, {VISITS}-visit loop: "
                    f"{per:.2f} ms (goal <= {GOAL_MS} ms) {verdict(per)}"
                )
        small_ms, calls = small_workspace(base, 1000)
        floor_small = git_floor(20)
        print(
            f"workspace of {SMALL_FILES} files, one appended to before each of 1000 checkpoints: "
            f"{small_ms:.3f} ms a checkpoint ({small_ms / floor_small:.2f}x one `git --version`, "
            f"{floor_small:.2f} ms), {calls} git processes"
        )
        count = 20
        wall_u, cpu_u, wall_c, cpu_c, floor, size = big_workspace(base, count)
        print(
            f"workspace of {FILES} files, {count} checkpoints each; floor (git --version) {floor:.2f} ms"
        )
        print(
            f"  unchanged  {wall_u:7.2f} ms wall ({wall_u / floor:5.1f}x floor)  {cpu_u:7.2f} ms CPU"
        )
        print(
            f"  {CHANGED_FILES} changed  {wall_c:7.2f} ms wall ({wall_c / floor:5.1f}x floor)  {cpu_c:7.2f} ms CPU  "
            f"disk {size / (2 * count + 2):8.0f} B/checkpoint"
        )
        print(
            f"checkpoint of an unchanged {FILES}-file workspace: {cpu_u:.2f} ms CPU "
            f"(goal <= {GOAL_MS} ms) {verdict(cpu_u)}"
        )


if __name__ == "__main__":
    main()
