"""Prompt-step fields as Wave means them: a step's `permissions` add to its persona's
and its adapter's (allow lists and deny lists each joined, deny wins), and
`exec.type: slash_command` asks the agent to run a command."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import swell, write_pipeline

MANIFEST = """apiVersion: v1
kind: WaveManifest
metadata: {name: perms}
adapters:
  replay:
    type: scripted
    options: {script: replies.yaml, calls: calls.jsonl}
    default_permissions: {allowed_tools: [Glob], deny: [WebFetch]}
personas:
  dev:
    adapter: replay
    permissions: {allowed_tools: [Read, Write, Bash]}
"""
PIPELINE = """kind: WavePipeline
metadata: {name: edit}
steps:
  - id: edit
    persona: dev
    permissions: {allowed_tools: [Edit], deny: [Bash]}
    exec: {type: prompt, source: "edit the notes"}
"""


def test_step_permissions_merge_with_the_personas_and_the_adapters(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "replies.yaml").write_text("replies:\n  - {text: done}\n")
    write_pipeline(root, "edit", PIPELINE)
    result = swell("run", "edit", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    call = json.loads((root / "calls.jsonl").read_text().splitlines()[0])
    assert sorted(call["allowed_tools"]) == ["Edit", "Glob", "Read", "Write"]  # Bash denied
    assert sorted(call["denied_tools"]) == ["Bash", "WebFetch"]
    checked = swell("validate", cwd=root)
    assert "permissions" not in checked.stdout + checked.stderr  # runs: no "not run" warning


SLASH = """kind: WavePipeline
metadata: {name: slash}
steps:
  - id: spec
    persona: dev
    exec: {type: slash_command, command: speckit.specify, args: "for {{ input }}"}
"""


def test_a_slash_command_step_asks_the_agent_to_run_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "replies.yaml").write_text("replies:\n  - {text: done}\n")
    write_pipeline(root, "slash", SLASH)
    result = swell("run", "slash", "--input", "login", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    call = json.loads((root / "calls.jsonl").read_text().splitlines()[0])
    assert call["prompt"].startswith("Run `/speckit.specify` with: for login")
    write_pipeline(root, "slash", SLASH.replace("command: speckit.specify, ", ""))
    bad = swell("validate", cwd=root)
    assert bad.returncode != 0 and "slash_command needs exec.command" in bad.stdout + bad.stderr
