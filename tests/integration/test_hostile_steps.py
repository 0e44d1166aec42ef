"""A hostile step (an agent with a shell) or a broken disk cannot hang, fool or crash
swell (issue 28): what a step leaves in its workspace is read only as a regular file,
bounded, off the event loop; a templated sub-pipeline names a pipeline of the project;
what swell prints cannot drive the terminal; a value too large for the environment is
refused with one clear message. Every run here has a subprocess timeout: on the code
before the fix, the first tests hung until SIGKILL."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import events, run_id_of, swell, write_pipeline

MANIFEST = """\
apiVersion: v1
kind: WaveManifest
metadata: {name: hostile}
adapters:
  replay:
    type: scripted
    options: {script: scripts/replies.yaml}
personas:
  reviewer: {adapter: replay, system_prompt: "You review."}
"""

HANG_GUARD = 90  # seconds: a run that hangs fails the test instead of the suite


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "scripts").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "scripts" / "replies.yaml").write_text("replies: []\n")
    return root


def _run(root: Path, name: str, *args: str) -> tuple[int, str, list[dict[str, Any]]]:
    result = swell("run", name, *args, cwd=root, timeout=HANG_GUARD)
    said = result.stdout + result.stderr
    return result.returncode, said, events(root, run_id_of(result.stdout))


def _failed_contracts(found: list[dict[str, Any]]) -> dict[int, str]:
    return {e["index"]: e["error"] for e in found if e["type"] == "contract.failed"}


# ------------------------------------------------------------ files a step leaves


def test_a_fifo_as_a_contract_source_fails_each_file_contract_at_once(proj: Path) -> None:
    """Before the fix the first of these contracts blocked swell's event loop on the
    FIFO for good: `--timeout`, cancel, Ctrl-C and SIGTERM were not handled."""
    (proj / "scripts" / "replies.yaml").write_text(
        "replies:\n  - step: plant.review\n    text: "
        '\'{"verdict": "pass", "issues": [], "suggestions": [], "confidence": 1, "summary": "ok"}\'\n'
    )
    bin_dir = proj / "bin"
    bin_dir.mkdir()
    (bin_dir / "tsc").write_text("#!/bin/sh\nexit 0\n")  # it is never reached
    (bin_dir / "tsc").chmod(0o755)
    write_pipeline(
        proj,
        "fifo",
        """\
kind: WavePipeline
metadata: {name: fifo}
steps:
  - id: plant
    type: command
    script: mkfifo out.json && mkfifo spec.md && mkfifo types.ts
    handover:
      contracts:
        - {type: json_schema, source: out.json, schema: '{"type": "object"}', on_failure: continue}
        - {type: non_empty_file, source: out.json, on_failure: continue}
        - {type: format, source: out.json, on_failure: continue}
        - {type: markdown_spec, source: spec.md, on_failure: continue}
        - {type: typescript_interface, schema_path: types.ts, on_failure: continue}
        - {type: llm_judge, source: out.json, criteria: [good], on_failure: continue}
        - {type: agent_review, persona: reviewer, source: out.json, on_failure: continue}
""",
    )
    env_path = f"{bin_dir}:/usr/bin:/bin"
    result = swell(
        "run", "fifo", "--timeout", "60s", cwd=proj, timeout=HANG_GUARD, env=_env(PATH=env_path)
    )
    found = events(proj, run_id_of(result.stdout))
    failed = _failed_contracts(found)
    assert failed == {
        0: "out.json is not a regular file (a FIFO)",
        1: "out.json is not a regular file (a FIFO)",
        2: "format: out.json is not a regular file (a FIFO)",
        3: "markdown_spec: spec.md is not a regular file (a FIFO)",
        4: "typescript_interface: types.ts is not a regular file (a FIFO)",
        5: "llm_judge: out.json is not a regular file (a FIFO)",
    }, result.stdout + result.stderr
    # a review goes on without the file, and says why it was not shown
    warnings = [e["message"] for e in found if e["type"] == "warning"]
    assert "the file under review, out.json, is not a regular file (a FIFO)" in warnings


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def test_a_link_out_of_the_workspace_as_a_source_is_refused_not_read(proj: Path) -> None:
    write_pipeline(
        proj,
        "leak",
        """\
kind: WavePipeline
metadata: {name: leak}
steps:
  - id: plant
    type: command
    script: ln -s /etc/passwd out.json
    handover:
      contract: {type: json_schema, source: out.json, schema: '{"type": "object"}'}
""",
    )
    code, said, found = _run(proj, "leak")
    assert code == 1
    assert _failed_contracts(found) == {0: "source 'out.json' escapes the step's workspace"}
    assert "root:" not in said and "root:" not in json.dumps(found)


def test_a_fifo_or_a_socket_as_an_output_artifact_is_refused(proj: Path) -> None:
    """Before the fix both were skipped without a word (they are not `required`)."""
    write_pipeline(
        proj,
        "special",
        """\
kind: WavePipeline
metadata: {name: special}
steps:
  - id: plant
    type: command
    script: |
      mkfifo pipe.out
      python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock.out')"
    output_artifacts:
      - {name: pipe, path: pipe.out}
      - {name: sock, path: sock.out}
""",
    )
    code, said, found = _run(proj, "special")
    assert code == 1, said
    finished = next(e for e in found if e["type"] == "step.finished")
    assert finished["error"] == (
        "artifact 'pipe' (pipe.out) is not a regular file (a FIFO); not recorded; "
        "artifact 'sock' (sock.out) is not a regular file (a socket); not recorded"
    )
    assert not [e for e in found if e["type"] == "artifact.written" and e["name"] != "output"]


def test_timeout_wins_over_hashing_a_huge_sparse_artifact(proj: Path) -> None:
    """A terabyte of holes costs a step one `truncate`; hashing it takes many minutes.
    Before the fix the hash ran on the event loop and `--timeout` waited for it."""
    write_pipeline(
        proj,
        "sparse",
        """\
kind: WavePipeline
metadata: {name: sparse}
steps:
  - id: plant
    type: command
    script: truncate -s 1T big.bin
    output_artifacts: [{name: big, path: big.bin, type: binary}]
""",
    )
    result = swell("run", "sparse", "--timeout", "3s", cwd=proj, timeout=HANG_GUARD)
    assert result.returncode == 124, result.stdout + result.stderr
