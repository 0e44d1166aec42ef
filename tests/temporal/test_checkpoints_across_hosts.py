"""Issue 33: one mechanism for checkpoints across hosts. Two workers that share
neither a state directory nor a workspace (two hosts: each its own SWELL_STATE_DIR
and SWELL_WORKSPACES_ROOT; the store and the run's remote are shared) run the visits
of one run; each visit's checkpoint goes to the run's remote, its parent the run's
newest whatever host took it, and `swell diff` and `swell fork` from a third state
directory fetch the checkpoints they need."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import events, run_id_of, swell, swell_json, wait_for, write_pipeline
from temporal.conftest import Workers, run_end

ACROSS = """kind: WavePipeline
metadata: {{name: across}}
steps:
  - id: one
    type: command
    script: |
      printf 'build/\\n' > .gitignore
      mkdir -p build && echo built > build/out
      echo one >> work.txt
  - id: two
    type: command
    dependencies: [one]
    script: |
      echo two >> work.txt
      touch {signals}/two.started
      while [ ! -f {signals}/two.go ]; do sleep 0.1; done
  - id: three
    type: command
    dependencies: [two]
    script: |
      cat build/out > seen.txt 2>/dev/null || true
      echo three >> work.txt
"""


def _host(tmp_path: Path, name: str) -> dict[str, str]:
    root = tmp_path / name
    (root / "workspaces").mkdir(parents=True, exist_ok=True)
    return {
        "SWELL_WORKSPACES_ROOT": str(root / "workspaces"),
        "SWELL_STATE_DIR": str(root / "state"),
    }


def _refs(bare: Path, prefix: str) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(bare), "for-each-ref", "--format=%(refname)", prefix],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(line.removeprefix(prefix + "/") for line in out.splitlines())


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.mark.slow
def test_diff_and_fork_of_visits_other_hosts_ran(
    project: Path, workers: Workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    monkeypatch.setenv("SWELL_WORKSPACE_REMOTE", str(bare))
    monkeypatch.setenv("SWELL_STORE", str(tmp_path / "shared.db"))  # every host's
    third = Path(os.environ["SWELL_STATE_DIR"])  # this test's own: no visit runs here
    signals = tmp_path / "signals"
    signals.mkdir()
    write_pipeline(project, "across", ACROSS.format(signals=signals))
    host_a, host_b = _host(tmp_path, "a"), _host(tmp_path, "b")
    first = workers.start(env=host_a)
    started = swell("run", "across", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    run_id = started.stdout.strip()
    wait_for(lambda: (signals / "two.started").is_file(), 60)
    os.killpg(first.pid, signal.SIGKILL)  # `one` ran on host a; `two` dies there
    first.wait()
    (signals / "two.go").touch()
    workers.start(env=host_b)  # `two` again, then `three`, on host b
    status = run_end(project, run_id)
    assert status["status"] == "succeeded", status.get("error")
    on_b = Path(host_b["SWELL_WORKSPACES_ROOT"]) / run_id
    assert _lines(on_b / "work.txt") == ["one", "two", "three"]
    assert _lines(on_b / "seen.txt") == ["built"]  # the ignored file came over with `one`
    # each host kept its visits' checkpoints; every one is on the run's remote too
    assert (Path(host_a["SWELL_STATE_DIR"]) / "checkpoints.git").is_dir()
    assert (Path(host_b["SWELL_STATE_DIR"]) / "checkpoints.git").is_dir()
    assert not (third / "checkpoints.git").exists()
    prefix = f"refs/swell-checkpoints/{run_id}"
    assert _refs(bare, prefix) == ["one/1", "three/1", "tip/main", "two/1"]
    recorded = [e for e in events(project, run_id) if e["type"] == "workspace.checkpoint"]
    assert [e["remote"] for e in recorded] == [str(bare)] * 3

    # host b's visit of `two`, whose checkpoint's parent is host a's `one`: that change alone
    two = swell("diff", run_id, "two#1", cwd=project)
    assert two.returncode == 0, two.stderr
    assert "+two" in two.stdout and "+one" not in two.stdout, two.stdout
    one = swell("diff", run_id, "one#1", "--stat", cwd=project)
    assert one.returncode == 0, one.stderr
    assert "work.txt" in one.stdout and ".gitignore" in one.stdout
    assert "build" not in one.stdout  # ignored: not in the checkpoint

    forked = swell("fork", run_id, "--at", "two#1", cwd=project)
    assert forked.returncode == 0, forked.stderr
    fork = run_id_of(forked.stdout)
    assert swell_json("status", fork, cwd=project)["status"] == "succeeded"
    workspace = Path(swell_json("status", fork, cwd=project)["workspace"])
    assert _lines(workspace / "work.txt") == ["one", "two", "three"]
    three = swell("diff", fork, "three#1", cwd=project)
    assert three.returncode == 0, three.stderr
    assert "+three" in three.stdout and "+two" not in three.stdout, three.stdout

    # the run itself, taken back to host b's visit of `two` from here, goes on here
    rewound = swell("rewind", run_id, "--to", "two#1", cwd=project)
    assert rewound.returncode == 0, rewound.stdout + rewound.stderr
    here = Path(swell_json("status", run_id, cwd=project)["workspace"])
    assert _lines(here / "work.txt") == ["one", "two", "three"]
    again = swell("diff", run_id, "three#1", cwd=project)
    assert "+three" in again.stdout and "+two" not in again.stdout, again.stdout

    # a host whose checkpoints lack the visit, with the remote gone: one clear error
    bare.rename(tmp_path / "moved.git")
    fourth = {**os.environ, "SWELL_STATE_DIR": str(tmp_path / "fourth")}
    lost = swell("diff", run_id, "one#1", cwd=project, env=fourth)
    assert lost.returncode != 0
    assert f"fetching it from the run's remote {bare} failed" in lost.stderr, lost.stderr
    assert "Traceback" not in lost.stderr
