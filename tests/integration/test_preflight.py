"""Checks before a run starts: each problem is reported with its fix, exit 1, and no
run record is created (docs/cli.md, "Checks before a run")."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conftest import swell, swell_json, write_pipeline

AGENT = """
kind: WavePipeline
steps:
  - id: write
    persona: {persona}
    exec: {{type: prompt, source: "write the file"}}
    output_artifacts:
      - {{name: report, path: report.md}}
"""


def no_runs(project: Path) -> bool:
    return swell_json("list", cwd=project) == []


def fake_cli(tmp_path: Path, name: str) -> Path:
    """A stand-in agent CLI binary (only its presence matters here)."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\necho 1.0.0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def env_without_keys(tmp_path: Path, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_"))
    }
    return {**env, "HOME": str(home), **extra}


def test_unknown_adapter_is_reported_before_a_run_exists(project: Path) -> None:
    result = swell("run", "loop", "--adapter", "foo", cwd=project)
    assert result.returncode == 1
    assert "unknown adapter 'foo'" in result.stderr
    assert "known: browser, claude, codex" in result.stderr
    assert "fix: use one of those, or add adapters.foo" in result.stderr
    assert "Traceback" not in result.stderr and "AdapterUnknown(" not in result.stderr
    assert result.stdout == ""
    assert no_runs(project)


def test_missing_agent_cli_and_api_key_are_reported_with_their_fixes(
    project: Path, tmp_path: Path
) -> None:
    env = env_without_keys(tmp_path, PATH="/usr/bin:/bin")
    result = swell("run", "impl-issue", "--adapter", "claude", cwd=project, env=env)
    assert result.returncode == 1, result.stdout
    err = result.stderr
    assert "run of pipeline 'impl-issue' not started, 2 problems" in err
    assert "adapter 'claude' needs the `claude` CLI, which is not installed" in err
    assert "fix: npm install -g @anthropic-ai/claude-code, or set adapters.claude.binary" in err
    assert "adapter 'claude' has no credentials" in err
    assert "fix: export ANTHROPIC_API_KEY=..., or run `claude` once and log in" in err
    assert no_runs(project)


def test_a_configured_binary_and_a_key_satisfy_the_checks(project: Path, tmp_path: Path) -> None:
    binary = fake_cli(tmp_path, "claude")
    text = (project / "wave.yaml").read_text()
    (project / "wave.yaml").write_text(
        text.replace(
            "adapters:\n", f"adapters:\n  claude-fast:\n    type: claude\n    binary: {binary}\n"
        )
    )
    env = env_without_keys(tmp_path, PATH="/usr/bin:/bin")
    dry = swell("run", "loop", "--adapter", "claude-fast", "--dry-run", cwd=project, env=env)
    assert dry.returncode == 0, dry.stdout + dry.stderr  # loop has no agent step: nothing to check
    result = swell(
        "run", "impl-issue", "--adapter", "claude-fast", "--dry-run", cwd=project, env=env
    )
    assert result.returncode == 1
    assert "needs the" not in result.stdout  # the binary is found
    assert "adapter 'claude-fast' has no credentials" in result.stdout
    env["ANTHROPIC_API_KEY"] = "sk-test"
    result = swell(
        "run", "impl-issue", "--adapter", "claude-fast", "--dry-run", cwd=project, env=env
    )
    assert result.returncode == 0, result.stdout
    assert f"adapter claude-fast (claude), model adapter default, {binary}" in result.stdout


def test_a_login_file_counts_as_credentials(project: Path, tmp_path: Path) -> None:
    binary = fake_cli(tmp_path, "codex")
    env = env_without_keys(tmp_path, PATH=f"{binary.parent}:/usr/bin:/bin")
    result = swell("run", "impl-issue", "--adapter", "codex", "--dry-run", cwd=project, env=env)
    assert "adapter 'codex' has no credentials" in result.stdout
    auth = tmp_path / "home" / ".codex" / "auth.json"
    auth.parent.mkdir(parents=True)
    auth.write_text("{}")
    result = swell("run", "impl-issue", "--adapter", "codex", "--dry-run", cwd=project, env=env)
    assert result.returncode == 0, result.stdout


def test_a_persona_that_may_not_write_the_step_s_file(project: Path, tmp_path: Path) -> None:
    # claude enforces permissions: a reader-only persona cannot write report.md
    binary = fake_cli(tmp_path, "claude")
    text = (project / "wave.yaml").read_text()
    text = text.replace(
        "personas:\n",
        "personas:\n  reader:\n    adapter: claude\n    permissions:\n"
        "      allowed_tools: [Read, Grep, 'Bash(git log *)']\n"
        "  writer:\n    adapter: claude\n    permissions:\n"
        "      allowed_tools: [Read, 'Write(docs/**)']\n"
        "  denied:\n    adapter: claude\n    permissions:\n      deny: [Write, Edit, Bash, MultiEdit, NotebookEdit]\n",
    )
    (project / "wave.yaml").write_text(text)
    write_pipeline(project, "report", AGENT.format(persona="reader"))
    write_pipeline(project, "report-ok", AGENT.format(persona="writer"))
    write_pipeline(project, "report-denied", AGENT.format(persona="denied"))
    env = env_without_keys(tmp_path, PATH=f"{binary.parent}:/usr/bin:/bin", ANTHROPIC_API_KEY="k")
    result = swell("run", "report", cwd=project, env=env)
    assert result.returncode == 1
    assert (
        "step 'write' must write report.md, but persona 'reader' may not write files "
        "(allowed_tools: Read, Grep, Bash(git log *); deny: none)"
    ) in result.stderr
    assert "fix: add Write (or Edit) to personas.reader.permissions.allowed_tools" in result.stderr
    assert no_runs(project)
    assert swell("run", "report-ok", "--dry-run", cwd=project, env=env).returncode == 0
    denied = swell("run", "report-denied", "--dry-run", cwd=project, env=env)
    assert "persona 'denied' may not write files" in denied.stdout


def test_a_tool_less_adapter_cannot_write_a_file_artifact(project: Path) -> None:
    write_pipeline(project, "plan-file", AGENT.format(persona="planner"))
    result = swell("run", "plan-file", cwd=project)
    assert result.returncode == 1
    assert "adapter 'local' has no tools and cannot write files" in result.stderr
    assert "fix: declare the artifact with `source: stdout`" in result.stderr


def test_a_required_input_must_be_given_and_an_optional_one_need_not(project: Path) -> None:
    write_pipeline(
        project,
        "triage",
        """
        kind: WavePipeline
        input: {source: cli, type: issue_ref, example: "re-cinq/wave 42"}
        steps:
          - id: show
            script: echo {{ input }}
        """.replace("\n        ", "\n"),
    )
    result = swell("run", "triage", cwd=project)
    assert result.returncode == 1
    assert "pipeline 'triage' needs an input (input.type: issue_ref)" in result.stderr
    assert "fix: swell run triage --input 're-cinq/wave 42'" in result.stderr
    assert no_runs(project)
    ok = swell("run", "triage", "--input", "re-cinq/wave 42", cwd=project)
    assert ok.returncode == 0, ok.stderr
    # free text (no type, or `type: string`) stays optional
    assert swell("run", "loop", cwd=project).returncode == 0
    write_pipeline(
        project,
        "free",
        "kind: WavePipeline\ninput: {type: string}\nsteps:\n  - id: s\n    script: 'true'\n",
    )
    assert swell("run", "free", cwd=project).returncode == 0


def test_an_unknown_input_type_is_a_manifest_error(project: Path) -> None:
    write_pipeline(
        project,
        "bad",
        "kind: WavePipeline\ninput: {type: issue}\nsteps:\n  - id: s\n    script: 'true'\n",
    )
    result = swell("validate", "bad", cwd=project)
    assert result.returncode == 1
    assert "bad.yaml:2:" in result.stderr and "issue_ref" in result.stderr
