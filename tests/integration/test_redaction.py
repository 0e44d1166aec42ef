"""A secret in the environment never reaches the store, the logs or `-o json`."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import run_id_of, swell, write_pipeline

TOKEN = "tok-0123456789-abcdef"
SHAPED = "ghp_" + "Zz9" * 12  # a GitHub token swell was never told about

PIPELINE = """kind: WavePipeline
metadata: {name: leaky}
steps:
  - id: leak
    type: command
    script: |
      echo "using $DEPLOY_TOKEN and $NOTE"
      sleep 0.6
      echo "again $DEPLOY_TOKEN" >&2
      exit 1
"""


def test_secrets_are_masked_in_everything_swell_keeps(project: Path) -> None:
    write_pipeline(project, "leaky", PIPELINE)
    env = {**os.environ, "DEPLOY_TOKEN": TOKEN, "NOTE": SHAPED}
    run = swell("run", "leaky", "-o", "json", cwd=project, env=env)
    assert run.returncode == 1
    assert TOKEN not in run.stdout and SHAPED not in run.stdout
    assert "using [REDACTED] and [REDACTED]" in run.stdout
    text = swell("run", "leaky", cwd=project, env=env)
    run_id = run_id_of(text.stdout)
    assert TOKEN not in text.stdout + text.stderr
    logs = swell("logs", run_id, "-o", "json", cwd=project)
    assert "[REDACTED]" in logs.stdout and TOKEN not in logs.stdout
    # the store's files and the command's log artifact hold no copy either
    kept = [p for p in Path(os.environ["SWELL_STATE_DIR"]).rglob("*") if p.is_file()]
    assert kept
    for path in kept:
        data = path.read_bytes()
        assert TOKEN.encode() not in data and SHAPED.encode() not in data, path
