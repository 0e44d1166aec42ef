"""A `mode: readonly` mount in a sandboxed step (runtime.sandbox, real bwrap): read-only
by the kernel, but for Wave's `.agents/` in it, where a step that runs in the mount
writes its outputs (Wave's ops-pr-respond `verify` step does: `mkdir -p .agents/output`)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_id_of, swell, write_pipeline

PIPELINE = """
kind: WavePipeline
metadata: {name: verify}
steps:
  - id: verify
    type: command
    workspace:
      mount:
        - {source: ./, target: /project, mode: readonly}
    script: |
      mkdir -p .agents/output
      echo "cwd=$(pwd)" > .agents/output/verdict.txt
      (echo x > planted.txt) 2>/dev/null && echo WROTE-mount >> .agents/output/verdict.txt
      (echo x >> wave.yaml) 2>/dev/null && echo WROTE-project-file >> .agents/output/verdict.txt
      true
    output_artifacts:
      - {name: verdict, path: .agents/output/verdict.txt, type: text}
"""


def test_a_step_in_a_read_only_mount_writes_its_outputs_and_nothing_else(
    tmp_path: Path, isolated_state: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(
        "kind: WaveManifest\nmetadata: {name: mounts}\nruntime: {sandbox: {enabled: true}}\n"
    )
    write_pipeline(project, "verify", PIPELINE)
    result = swell("run", "verify", cwd=project, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    status = json.loads(swell("status", run_id_of(result.stdout), "-o", "json", cwd=project).stdout)
    workspace = Path(status["workspace"])
    verdict = (workspace / "project" / ".agents" / "output" / "verdict.txt").read_text()
    assert verdict.splitlines() == [f"cwd={workspace / 'project'}"], verdict
    assert not (workspace / "project" / "planted.txt").exists()
