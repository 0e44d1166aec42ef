"""What a checkpoint per visit costs (docs/time-travel.md).

Two measurements, each against a baseline measured in the same run:

- loop: `swell run` of a command loop of VISITS visits (default 3,000), once with
  checkpoints off (SWELL_CHECKPOINTS=off, the baseline) and once on; the difference
  per visit is the overhead. Two workloads: `unchanged` (each visit writes nothing)
  and `changed` (each visit appends a line to a file). Disk per visit is the size of
  the checkpoint repository over the visits.
- big workspace: checkpoints of a workspace of FILES files (default 10,000), as a
  run takes them (`Checkpoints.snapshot` with the run's `Memory`), when nothing
  changed and when a few files changed, and the first checkpoint of a new process
  (`swell resume`) with the stat cache on disk and without it. Its baseline, measured
  in the same run: one stat of every entry of the workspace, what a check by stat
  data alone costs (an unchanged checkpoint does not even that: inotify names the
  directories that changed). CPU and wall time are both given: on a loaded machine
  the wall time is mostly waiting for a core.

- small workspace: checkpoints of a workspace of SMALL_FILES files (default 50, in
  5 folders), each after appending a line to one file, measured directly: what a
  visit that changed a little costs (in process, no git process); the baseline is
  the same floor, one `git --version`.

The goal: at most 5 ms a visit when nothing changed (a visit of the loop; a
checkpoint of the big workspace, by CPU time). Absolute times are not asserted;
the script exits non-zero only when a run did not do what it should.
CHECKPOINT_BENCH_VISITS, CHECKPOINT_BENCH_FILES and CHECKPOINT_BENCH_ROUNDS change
the sizes and the number of rounds (the minimum of the rounds is reported).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from swell.workspace.checkpoint import Checkpoints, Memory, Snapshot  # noqa: E402

VISITS = int(os.environ.get("CHECKPOINT_BENCH_VISITS", "3000"))
FILES = int(os.environ.get("CHECKPOINT_BENCH_FILES", "10000"))
ROUNDS = int(os.environ.get("CHECKPOINT_BENCH_ROUNDS", "1"))
GOAL_MS = 5.0
CHANGED_FILES = 5
SMALL_FILES = int(os.environ.get("CHECKPOINT_BENCH_SMALL_FILES", "50"))
TIP = "refs/swell/b/tip/main"


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


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_loop(base: Path, write: bool, checkpoints: bool) -> tuple[float, float, int]:
    """Wall seconds of one `swell run` of the loop, the CPU seconds of it and its steps'
    processes (less swayed by a loaded machine), and the checkpoint repository's bytes."""
    root = project(base, write)
    state = root / ".swell"
    env = {**os.environ, "PYTHONPATH": str(SRC), "SWELL_STATE_DIR": str(state)}
    env["SWELL_CHECKPOINTS"] = "on" if checkpoints else "off"
    started, cpu0 = time.perf_counter(), children_cpu()
    done = subprocess.run(
        [sys.executable, "-m", "swell", "run", "cp", "-o", "quiet"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    took, cpu = time.perf_counter() - started, children_cpu() - cpu0
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
    return took, cpu, size


def git_floor(count: int) -> float:
    """Wall ms of one `git --version`: the least a checkpoint made by git costs."""
    t0 = time.perf_counter()
    for _ in range(count):
        subprocess.run(["git", "--version"], capture_output=True, check=True)
    return (time.perf_counter() - t0) / count * 1000


def stat_walk(ws: Path) -> float:
    """CPU ms of one `os.scandir` + `stat` of every entry of `ws`: what any check of
    the workspace's files by their stat data costs (the baseline of the goal)."""
    c0 = time.process_time()
    stack = [str(ws)]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return (time.process_time() - c0) * 1000


def big_workspace(base: Path, count: int) -> dict[str, float]:
    """Checkpoints of a workspace of FILES files, as a run takes them (one `Memory`
    per run, `Checkpoints.snapshot` after each visit): CPU and wall ms a checkpoint
    when nothing changed and when CHANGED_FILES files changed, the first checkpoint
    of a new process with the stat cache on disk and without it, the baseline (one
    stat walk of the workspace), and the repository's bytes per changed checkpoint."""
    ws = base / "big"
    for i in range(FILES):
        folder = ws / f"d{i % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    root = base / "big.git"
    index = base / "big.index"
    Checkpoints(root).ensure()

    def fresh(keep_cache: bool) -> tuple[Checkpoints, Snapshot, float, float]:
        """A new process's first checkpoint: CPU and wall ms."""
        if not keep_cache:
            index.with_suffix(".stat").unlink(missing_ok=True)
        repo = Checkpoints(root, Memory())
        c0, t0 = time.process_time(), time.perf_counter()
        snap = repo.snapshot(ws, index, refs=[TIP], message="m", parent=None, parent_tree=None)
        return repo, snap, (time.process_time() - c0) * 1000, (time.perf_counter() - t0) * 1000

    fresh(False)
    time.sleep(1.1)  # the files are older than their hashing: their stat data is trusted
    fresh(True)
    _, _, cold_cpu, cold_wall = fresh(False)  # every file read
    repo, snap, warm_cpu, warm_wall = fresh(True)  # only stat'ed
    before = du(root)

    def timed(change: bool) -> tuple[float, float]:
        nonlocal snap
        cpus, walls = [], []
        for n in range(count):
            if change:
                for k in range(CHANGED_FILES):
                    (ws / f"d{k}" / f"f{k}.txt").write_text(f"changed {n}\n")
            c0, t0 = time.process_time(), time.perf_counter()
            snap = repo.snapshot(
                ws, index, refs=[TIP], message="m", parent=snap.commit, parent_tree=snap.tree
            )
            cpus.append((time.process_time() - c0) * 1000)
            walls.append((time.perf_counter() - t0) * 1000)
            if snap.changed != change:
                sys.exit(f"a checkpoint said changed={snap.changed}, expected {change}")
        return statistics.median(cpus), statistics.median(walls)

    unchanged = timed(False)
    changed = timed(True)
    return {
        "unchanged_cpu": unchanged[0],
        "unchanged_wall": unchanged[1],
        "changed_cpu": changed[0],
        "changed_wall": changed[1],
        "cold_cpu": cold_cpu,
        "cold_wall": cold_wall,
        "warm_cpu": warm_cpu,
        "warm_wall": warm_wall,
        "baseline": min(stat_walk(ws) for _ in range(5)),
        "disk": (du(root) - before) / count,
    }


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


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
        print(
            f"loop of {VISITS} visits, {ROUNDS} round(s), off and on in turn; minimum of the "
            f"rounds; load {os.getloadavg()[0]:.1f}"
        )
        for write in (False, True):
            name = "changed" if write else "unchanged"
            runs = [
                (run_loop(base, write, False), run_loop(base, write, True)) for _ in range(ROUNDS)
            ]
            off_wall, on_wall = min(r[0][0] for r in runs), min(r[1][0] for r in runs)
            off_cpu, on_cpu = min(r[0][1] for r in runs), min(r[1][1] for r in runs)
            size = runs[0][1][2]
            per = (on_cpu - off_cpu) / VISITS * 1000
            print(
                f"  {name:<9} wall off {off_wall:7.2f} s on {on_wall:7.2f} s "
                f"(ratio {on_wall / off_wall:5.2f}x); CPU off {off_cpu:7.2f} s on {on_cpu:7.2f} s "
                f"(ratio {on_cpu / off_cpu:5.2f}x); overhead {per:6.2f} ms CPU/visit; "
                f"disk {size / VISITS:8.0f} B/visit"
            )
            if not write:
                print(
                    f"checkpoint overhead per unchanged visit, {VISITS}-visit loop: "
                    f"{per:.2f} ms CPU (goal <= {GOAL_MS} ms) {verdict(per)}"
                )
        print(f"load {os.getloadavg()[0]:.1f}")
        small_ms, calls = small_workspace(base, 1000)
        floor_small = git_floor(20)
        print(
            f"workspace of {SMALL_FILES} files, one appended to before each of 1000 checkpoints: "
            f"{small_ms:.3f} ms a checkpoint ({small_ms / floor_small:.2f}x one `git --version`, "
            f"{floor_small:.2f} ms), {calls} git processes"
        )
        count = 20
        big = big_workspace(base, count)
        print(f"workspace of {FILES} files, {count} checkpoints each (median); as a run takes them")
        print(
            f"  baseline: one stat walk of every entry {big['baseline']:7.2f} ms CPU "
            f"(what a check by stat data alone costs)"
        )
        print(
            f"  unchanged        {big['unchanged_cpu']:7.2f} ms CPU {big['unchanged_wall']:7.2f} ms wall"
            f"  ({big['unchanged_cpu'] / big['baseline']:.3f}x baseline)"
        )
        print(
            f"  {CHANGED_FILES} changed        {big['changed_cpu']:7.2f} ms CPU "
            f"{big['changed_wall']:7.2f} ms wall  disk {big['disk']:8.0f} B/checkpoint"
        )
        print(
            f"  a new process's first: stat cache on disk {big['warm_cpu']:7.2f} ms CPU "
            f"{big['warm_wall']:7.2f} ms wall; without it (every file read) "
            f"{big['cold_cpu']:7.2f} ms CPU {big['cold_wall']:7.2f} ms wall"
        )
        print(
            f"checkpoint of an unchanged {FILES}-file workspace: {big['unchanged_cpu']:.2f} ms CPU, "
            f"baseline {big['baseline']:.2f} ms (goal <= {GOAL_MS} ms) {verdict(big['unchanged_cpu'])}"
        )


if __name__ == "__main__":
    main()
