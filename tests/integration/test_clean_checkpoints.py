"""Issue 33: `swell clean` knows checkpoints and versions. Cleaning a run removes its
refs (refs/swell/RUN/*) and kept artifact versions and collects the checkpoint
repository: the disk shrinks, other runs' checkpoints stay whole, and a fork of a kept
run still starts from its checkpoint."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import run_id_of, swell, swell_json, write_pipeline

LOOP = """
kind: WavePipeline
metadata: {name: big}
steps:
  - id: work
    max_visits: 4
    script: |
      head -c 300000 /dev/urandom > "blob-$SWELL_VISIT.bin"
      echo "visit $SWELL_VISIT" > report.md
      if [ "$SWELL_VISIT" -ge 3 ]; then echo '{"done": "yes"}'; else echo '{"done": "no"}'; fi
    output:
      context:
        done: "{{ done }}"
    output_artifacts: [{name: report, path: report.md}]
    edges:
      - {target: _complete, condition: context.done=yes}
      - {target: work}
"""


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True)


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_cleaning_a_run_removes_its_checkpoints_and_versions_only(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(project, "big", LOOP)
    gone, kept = (run_id_of(swell("run", "big", cwd=project).stdout) for _ in range(2))
    repo = isolated_state / "checkpoints.git"
    refs = git(repo, "for-each-ref", "--format=%(refname)").stdout.split()
    assert any(r.startswith(f"refs/swell/{gone}/") for r in refs)
    assert (isolated_state / "runs" / gone / "versions").is_dir()
    kept_refs = {r: git(repo, "rev-parse", r).stdout for r in refs if f"/{kept}/" in r}
    before = du(repo)

    result = swell("clean", "--run", gone, "-o", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout)["checkpoints"]
    assert said["runs"] == [gone] and said["refs"] >= 3
    # about 900 KB of random blobs only that run kept: the repository lost them
    assert du(repo) < before - 600_000, (before, du(repo))
    left = git(repo, "for-each-ref", "--format=%(refname)").stdout.split()
    assert not [r for r in left if f"/{gone}/" in r]
    assert not (isolated_state / "runs" / gone / "versions").exists()
    assert {r: git(repo, "rev-parse", r).stdout for r in left if f"/{kept}/" in r} == kept_refs
    fsck = git(repo, "fsck", "--strict", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    # the kept run: its diff, and a fork from its checkpoint
    assert "blob-2.bin" in swell("diff", kept, "work#2", "--stat", cwd=project).stdout
    forked = swell("fork", kept, "--at", "work#2", cwd=project)
    assert forked.returncode == 0, forked.stderr
    fork = run_id_of(forked.stdout)
    status = swell_json("status", fork, cwd=project)
    assert status["status"] == "succeeded"
    ws = Path(status["workspace"])
    origin_ws = Path(swell_json("status", kept, cwd=project)["workspace"])
    for n in (1, 2):  # the checkpoint's files, as the kept run wrote them
        assert (ws / f"blob-{n}.bin").read_bytes() == (origin_ws / f"blob-{n}.bin").read_bytes()
    text = swell("clean", "--run", kept, cwd=project)
    assert "removed the checkpoints" in text.stdout, text.stdout
