"""Hostile sandboxed steps (runtime.sandbox, real bwrap): a fork bomb, a step filling its
/tmp, a step tracing swell. Each is one clear step failure (or nothing reached); the run
and the store stay intact and the machine is fine. docs/security.md, "Attacks tried"."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from conftest import events, run_id_of, swell, swell_cmd, wait_for, write_pipeline

MANIFEST = """
kind: WaveManifest
metadata: {{name: hostile}}
runtime:
  sandbox: {{enabled: true, {limits}}}
"""


def _project(tmp_path: Path, limits: str, script: str) -> Path:
    assert shutil.which("bwrap"), "bwrap is missing: apt-get install bubblewrap"
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(MANIFEST.format(limits=limits))
    steps = [
        {"id": "attack", "type": "command", "script": script},
        {"id": "after", "type": "command", "dependencies": ["attack"], "script": "true"},
    ]
    pipeline = {"kind": "WavePipeline", "metadata": {"name": "hostile"}, "steps": steps}
    write_pipeline(project, "hostile", json.dumps(pipeline))
    return project


def _status(project: Path, run_id: str) -> dict[str, object]:
    done = swell("status", run_id, "-o", "json", cwd=project)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


def _intact(project: Path, run_id: str) -> list[dict[str, object]]:
    """The run's events read back whole and numbered 1..n, the run `failed`."""
    found = events(project, run_id)
    assert [e["seq"] for e in found] == list(range(1, len(found) + 1))
    assert _status(project, run_id)["status"] == "failed"
    return found


def test_a_fork_bomb_is_bounded_by_the_pids_limit_and_ended(tmp_path: Path) -> None:
    project = _project(tmp_path, "pids_limit: 64", "bomb() { bomb | bomb & }; bomb; sleep 600")
    result = swell("run", "hostile", "--timeout", "300", cwd=project, timeout=400)
    assert result.returncode != 0
    run_id = run_id_of(result.stdout)
    found = _intact(project, run_id)
    warnings = [e["message"] for e in found if e["type"] == "warning"]
    assert any("reached the pids limit (64, runtime.sandbox.pids_limit)" in w for w in warnings)
    assert "reached the pids limit (64" in result.stdout
    failed = [e for e in found if e["type"] == "step.finished" and e["outcome"] == "failure"]
    assert [e["step_id"] for e in failed] == ["attack"]  # ended, not timed out
    assert "timed out" not in str(failed[0].get("error"))
    assert not any(e["type"] == "step.started" and e["step_id"] == "after" for e in found)
    # nothing of it is left, and the machine still starts processes
    marker = f"SWELL_RUN_ID={run_id}".encode()
    wait_for(lambda: not [p for p in _environs() if marker in p], timeout=60)  # killed: reaped
    assert subprocess.run(["true"], check=False).returncode == 0


def test_filling_tmp_is_bounded_by_its_size(tmp_path: Path) -> None:
    script = (
        "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1; "
        'echo "tmp=$(du -m /tmp/fill | cut -f1)" > tmp.txt; exit 1'
    )
    project = _project(tmp_path, "tmp_size_mb: 4", script.replace("exit 1", "test -z fail"))
    result = swell("run", "hostile", cwd=project, timeout=120)
    assert result.returncode != 0
    run_id = run_id_of(result.stdout)
    found = _intact(project, run_id)
    failed = [e for e in found if e["type"] == "step.finished" and e["outcome"] == "failure"]
    assert [e["step_id"] for e in failed] == ["attack"]
    assert "No space left on device" in str(failed[0]["error"])
    workspace = Path(str(_status(project, run_id)["workspace"]))
    assert (workspace / "tmp.txt").read_text().strip() in ("tmp=3", "tmp=4")
    # the next run of the same project is fine (the store was never touched)
    write_pipeline(
        project,
        "ok",
        json.dumps(
            {
                "kind": "WavePipeline",
                "metadata": {"name": "ok"},
                "steps": [{"id": "s", "type": "command", "script": "echo fine > f.txt"}],
            }
        ),
    )
    again = swell("run", "ok", cwd=project, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_step_cannot_trace_signal_or_read_swell(tmp_path: Path) -> None:
    script = """
      while [ ! -s target-pid ]; do sleep 0.1; done
      pid=$(cat target-pid)
      strace -p "$pid" -o /dev/null > /dev/null 2>&1 & sleep 1; kill $! 2>/dev/null
      wait $! 2>/dev/null && echo "TRACED" >> report.txt
      gdb -p "$pid" -batch -ex 'info proc' 2>/dev/null | grep -q "process $pid" \\
        && echo "GDB" >> report.txt
      kill -STOP "$pid" 2>/dev/null && echo "STOPPED" >> report.txt
      cat "/proc/$pid/environ" > /dev/null 2>&1 && echo "READ" >> report.txt
      strace -p 1 -o /dev/null > /dev/null 2>&1 & sleep 1; kill $! 2>/dev/null
      wait $! 2>/dev/null && echo "TRACED its own init" >> report.txt
      echo "seen=$(ls /proc | grep -c '^[0-9]')" >> report.txt
      true
    """
    project = _project(tmp_path, "pids_limit: 256", script)
    out = tmp_path / "swell.out"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [*swell_cmd(), "run", "hostile"],
            cwd=project,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    run_id = run_id_of(wait_for(lambda: out.read_text().partition("\n")[1] and out.read_text()))
    workspace = wait_for(lambda: Path(str(_status(project, run_id)["workspace"])))
    wait_for(lambda: workspace.is_dir())
    (workspace / "target-pid").write_text(f"{proc.pid}\n")
    assert proc.wait(timeout=120) == 0, out.read_text()
    report = (workspace / "report.txt").read_text()
    for done in ("TRACED", "GDB", "STOPPED", "READ"):
        assert done not in report, report
    assert int(report.split("seen=")[1]) < 10


def _environs() -> list[bytes]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "environ").read_bytes())
            except OSError:
                continue
    return found
