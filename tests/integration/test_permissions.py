"""Wave's permission entries (`allowed_tools: ["*"]`, `Bash(git push*)`, ...) and what an
adapter cannot enforce: `swell validate` warns and the run records one warning per entry
(docs/adapters.md, "Permissions"). The adapters' CLIs themselves are tested against twins
in tests/adapters."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import events, run_id_of, swell, write_pipeline

PIPELINE = """
kind: WavePipeline
steps:
  - id: work
    persona: {persona}
    exec: {{type: prompt, source: "do the work"}}
    output_artifacts:
      - {{name: notes, path: notes.md}}
"""
PERSONAS = """personas:
  wave-codex:
    adapter: codex
    permissions:
      allowed_tools: ["*"]
      deny: ["Bash(git push*)", "Write(secrets/*)"]
  wave-claude:
    adapter: claude
    permissions:
      allowed_tools: ["*"]
      deny: ["Bash(git push*)"]
"""
CODEX_PUSH = (
    "adapter 'codex' cannot enforce deny entry 'Bash(git push*)': codex's shell cannot be "
    "taken away or limited per command; its workspace-write sandbox is all that holds"
)
CODEX_SECRETS = "adapter 'codex' cannot enforce deny entry 'Write(secrets/*)'"


def wave_personas(project: Path) -> None:
    text = (project / "wave.yaml").read_text()
    (project / "wave.yaml").write_text(text.replace("personas:\n", PERSONAS, 1))
    write_pipeline(project, "star-codex", PIPELINE.format(persona="wave-codex"))
    write_pipeline(project, "star-claude", PIPELINE.format(persona="wave-claude"))


def fake_cli(tmp_path: Path, name: str) -> Path:
    """A stand-in agent CLI that answers nothing (the visit fails after its warnings)."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\ncat > /dev/null\n")
    path.chmod(0o755)
    return path


def test_validate_names_each_entry_an_adapter_cannot_enforce(project: Path) -> None:
    wave_personas(project)
    codex = swell("validate", ".agents/pipelines/star-codex.yaml", cwd=project)
    assert codex.returncode == 0, codex.stdout + codex.stderr
    assert f"warning: {CODEX_PUSH}; the run will record this" in codex.stderr
    assert CODEX_SECRETS in codex.stderr
    claude = swell("validate", ".agents/pipelines/star-claude.yaml", cwd=project)
    assert claude.returncode == 0, claude.stdout + claude.stderr
    assert "cannot enforce" not in claude.stderr  # claude enforces "*" and the deny list


def test_a_run_records_what_the_adapter_cannot_enforce(project: Path, tmp_path: Path) -> None:
    wave_personas(project)
    binary = fake_cli(tmp_path, "codex")
    env = {**os.environ, "PATH": f"{binary.parent}:/usr/bin:/bin", "OPENAI_API_KEY": "sk-test"}
    # "*" lets the persona write notes.md: the checks before the run let it start
    result = swell("run", "star-codex", cwd=project, env=env)
    assert "may not write files" not in result.stderr, result.stderr
    warnings = [
        e["message"] for e in events(project, run_id_of(result.stdout)) if e["type"] == "warning"
    ]
    assert CODEX_PUSH in warnings
    assert any(w.startswith(CODEX_SECRETS) for w in warnings), warnings


def test_a_star_persona_may_write_the_step_s_file(project: Path, tmp_path: Path) -> None:
    # claude enforces permissions, so the checks before a run ask whether the persona
    # may write notes.md: "*" is every tool, writers included
    wave_personas(project)
    binary = fake_cli(tmp_path, "claude")
    env = {**os.environ, "PATH": f"{binary.parent}:/usr/bin:/bin", "ANTHROPIC_API_KEY": "k"}
    result = swell("run", "star-claude", "--dry-run", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "may not write files" not in result.stdout + result.stderr
