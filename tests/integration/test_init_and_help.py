"""`swell init` (a persona on the embedded model, a pipeline using it, .gitignore) and
`--help` of every command showing every argument's and option's help text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import swell

COMMANDS = (
    "init", "validate", "run", "resume", "list", "status", "logs", "artifacts", "approve",
    "reject", "cancel", "thread", "doctor", "clean",
)  # fmt: skip


def test_init_scaffolds_a_persona_and_a_pipeline_that_runs_offline(tmp_path: Path) -> None:
    target = tmp_path / "fresh"
    result = swell("init", str(target), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "created .gitignore (.swell/)" in result.stdout
    assert (target / ".gitignore").read_text() == "# swell's runs, workspaces and logs\n.swell/\n"
    manifest = (target / "wave.yaml").read_text()
    assert "personas:\n  planner:\n    adapter: local" in manifest
    assert (target / ".agents" / "personas" / "planner.md").is_file()
    pipeline = (target / ".agents" / "pipelines" / "hello.yaml").read_text()
    assert "persona: planner" in pipeline
    assert swell("validate", cwd=target).returncode == 0
    listed = swell("list", "personas", cwd=target).stdout
    assert "planner" in listed and "local" in listed
    run = swell("run", "hello", "--input", "add a greeting", cwd=target, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "✓ plan" in run.stdout and "run succeeded" in run.stdout


def test_init_appends_to_a_gitignore_once(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules")  # no newline at the end
    assert swell("init", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".gitignore").read_text() == (
        "node_modules\n# swell's runs, workspaces and logs\n.swell/\n"
    )
    (tmp_path / "wave.yaml").unlink()
    again = swell("init", cwd=tmp_path)
    assert again.returncode == 0
    assert "gitignore" not in again.stdout
    assert (tmp_path / ".gitignore").read_text().count(".swell") == 1


@pytest.mark.parametrize("entry", ["/.swell", ".swell", "/.swell/"])
def test_init_sees_an_existing_entry(tmp_path: Path, entry: str) -> None:
    (tmp_path / ".gitignore").write_text(f"build/\n{entry}\n")
    assert swell("init", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".gitignore").read_text() == f"build/\n{entry}\n"


def _sections(text: str) -> dict[str, list[str]]:
    """`--help`'s sections: "Arguments" and "Options", their entries with help text."""
    found: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line in ("Arguments:", "Options:"):
            current = line[:-1]
            found[current] = []
        elif current and re.match(r"  \S", line):
            found[current].append(line)
        elif current and line.startswith("   ") and found[current]:
            found[current][-1] += " " + line.strip()
        elif not line.strip():
            current = None
    return found


@pytest.mark.parametrize("command", COMMANDS)
def test_every_argument_and_option_has_help_text(command: str, tmp_path: Path) -> None:
    result = swell(command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sections = _sections(result.stdout)
    assert "Options" in sections
    entries = sections.get("Arguments", []) + sections["Options"]
    for entry in entries:
        # "  NAME  help text": a name, two spaces or more, then words
        name, _, help_text = entry.strip().partition("  ")
        assert help_text.strip(), f"`swell {command} --help`: no help for {name}\n{result.stdout}"
    # every positional argument of the usage line is listed with its help
    usage = result.stdout.splitlines()[0]
    positional = [w for w in usage.split()[5:] if w != "[OPTIONS]"]
    assert len(sections.get("Arguments", [])) == len(positional), result.stdout
