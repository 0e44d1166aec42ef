"""A `swell worker` sandboxes the visits it runs (runtime.sandbox, real bwrap, a real
Temporal dev server): a command step run on a worker cannot read a file planted in the
worker's HOME, while the same step unsandboxed can."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_id_of, swell, swell_json, write_pipeline
from temporal.conftest import Workers

PEEK = """kind: WavePipeline
metadata: {{name: peek}}
steps:
  - id: peek
    type: command
    script: |
      {{ cat "{key}" 2>/dev/null || echo no-key; echo "home=$HOME"; }} > seen.txt
"""


def test_a_worker_runs_a_command_step_in_the_sandbox(
    project: Path, workers: Workers, tmp_path: Path
) -> None:
    home = tmp_path / "worker-home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_rsa"
    key.write_text("-----BEGIN PRIVATE KEY-----\n")
    (project / "wave.yaml").write_text(
        "kind: WaveManifest\nmetadata: {name: boxed}\nruntime:\n  sandbox: {enabled: true}\n"
    )
    write_pipeline(project, "peek", PEEK.format(key=key))
    env = {"HOME": str(home)}
    workers.start(env=env)
    seen = {}
    for flag in ((), ("--no-sandbox",)):
        done = swell(
            "run", "peek", "--engine", "temporal", *flag, cwd=project, env={**os.environ, **env}
        )
        if flag:  # the Temporal engine refuses --no-sandbox (the workers decide)
            assert done.returncode != 0
            continue
        assert done.returncode == 0, done.stdout + done.stderr
        run_id = run_id_of(done.stdout)
        workspace = Path(str(swell_json("status", run_id, cwd=project)["workspace"]))
        seen = dict(
            line.split("=", 1) if "=" in line else (line, "")
            for line in (workspace / "seen.txt").read_text().splitlines()
        )
    assert "no-key" in seen and "-----BEGIN PRIVATE KEY-----" not in seen, seen
    assert seen["home"].endswith("/.home")  # the run's home, not the worker's
    assert key.read_text() == "-----BEGIN PRIVATE KEY-----\n"
