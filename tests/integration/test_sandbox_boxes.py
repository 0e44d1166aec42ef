"""One long-lived box per (run, sandbox shape) (runtime.sandbox, real bwrap): the command
steps of a run that share a workspace run in one bwrap, started once; what one visit left
in /tmp or left running is gone before the next visit's process starts
(docs/security.md, "One box per run and shape")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_id_of, swell, write_pipeline

MANIFEST = """
kind: WaveManifest
metadata: {name: boxes}
runtime:
  sandbox: {enabled: true}
"""

# `env -i` drops the visit's markers, so only the visit's pids cgroup can find it
FIRST = """
readlink /proc/self/ns/pid > first.ns
echo private > /tmp/left-by-first
setsid env -i sleep 1000 > /dev/null 2>&1 < /dev/null &
"""
SECOND = """
readlink /proc/self/ns/pid > second.ns
ls -A /tmp > second.tmp
for p in /proc/[0-9]*; do cat "$p/comm" 2>/dev/null; done | grep -c '^sleep$' > second.sleeps
true
"""


def test_visits_of_a_run_share_one_box_and_not_what_each_left(tmp_path: Path) -> None:
    assert shutil.which("bwrap"), "bwrap is missing: apt-get install bubblewrap"
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(MANIFEST)
    steps = [
        {"id": "first", "type": "command", "script": FIRST},
        {"id": "second", "type": "command", "dependencies": ["first"], "script": SECOND},
    ]
    pipeline = {"kind": "WavePipeline", "metadata": {"name": "two"}, "steps": steps}
    write_pipeline(project, "two", json.dumps(pipeline))
    result = swell("run", "two", cwd=project, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    status = swell("status", run_id_of(result.stdout), "-o", "json", cwd=project)
    workspace = Path(json.loads(status.stdout)["workspace"])
    # one pid namespace: the same bwrap ran both visits' processes
    first, second = (workspace / "first.ns").read_text(), (workspace / "second.ns").read_text()
    assert first.startswith("pid:[") and first == second
    # the box's /tmp was emptied between the visits (the workspace, mounted below it
    # when the state directory is under /tmp, is kept)
    assert "left-by-first" not in (workspace / "second.tmp").read_text()
    # and what the first visit left running, out of its session and without its markers,
    # was ended with it
    assert (workspace / "second.sleeps").read_text().strip() == "0"
