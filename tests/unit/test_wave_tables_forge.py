"""Wave's forge-variable tests (internal/pipeline/context_test.go, TestInjectForgeVariables_*
and TestForgeVariables_*), mirrored on real git repositories of our own: the remote
decides `{{ forge.* }}`, and a templated persona name renders from it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swell.engine.visit.forge import detect
from swell.templates.render import render_text

X = "pipeline/context_test.go:"
FIELDS = ("type", "host", "owner", "repo", "cli_tool", "prefix", "pr_term", "pr_command")
# (id, remote, the eight variables in FIELDS order)
FORGES = [
    (
        X + "TestInjectForgeVariables_GitHub",
        "https://github.com/recinq/wave.git",
        ("github", "github.com", "recinq", "wave", "gh", "gh", "Pull Request", "pr"),
    ),
    (
        X + "TestInjectForgeVariables_GitLab",
        "git@gitlab.com:acme/rocket.git",
        ("gitlab", "gitlab.com", "acme", "rocket", "glab", "gl", "Merge Request", "mr"),
    ),
    (
        X + "TestInjectForgeVariables_Bitbucket",
        "https://bitbucket.org/acme/rocket.git",
        ("bitbucket", "bitbucket.org", "acme", "rocket", "bb", "bb", "Pull Request", "pr"),
    ),
    (
        X + "TestInjectForgeVariables_Gitea",
        "https://gitea.example.org/acme/rocket.git",
        ("gitea", "gitea.example.org", "acme", "rocket", "tea", "gt", "Pull Request", "pr"),
    ),
    (
        X + "TestInjectForgeVariables_Codeberg",
        "https://codeberg.org/acme/rocket.git",
        ("codeberg", "codeberg.org", "acme", "rocket", "tea", "gt", "Pull Request", "pr"),
    ),
    (X + "TestInjectForgeVariables_Local", None, ("local", "", "", "", "", "local", "", "")),
]


def _repo(tmp_path: Path, remote: str | None) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", remote], check=True)
    return tmp_path


@pytest.mark.parametrize(("remote", "values"), [c[1:] for c in FORGES], ids=[c[0] for c in FORGES])
def test_forge_variables(tmp_path: Path, remote: str | None, values: tuple[str, ...]) -> None:
    found = detect(_repo(tmp_path, remote)).variables()
    assert tuple(found[f] for f in FIELDS) == values


def test_unknown_forge_gives_only_its_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """X:TestInjectForgeVariables_Unknown: type `unknown`, the rest empty, and a persona
    named `{{ forge.prefix }}-commenter` renders to `-commenter`. (swell never probes the
    host over HTTPS to find out more: deliberate, WAVE.md §8.)"""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `tea` to ask
    found = detect(_repo(tmp_path, "https://git.example.invalid/acme/rocket.git")).variables()
    assert found["type"] == "unknown"
    assert all(found[f] == "" for f in FIELDS if f not in ("type", "host", "owner", "repo"))
    assert render_text("{{ forge.prefix }}-commenter", {"forge": found}).text == "-commenter"


@pytest.mark.parametrize(
    ("remote", "template", "rendered"),
    [
        (
            "https://github.com/a/b.git",
            "{{ forge.cli_tool }} {{ forge.pr_command }} create",
            "gh pr create",
        ),
        (
            "https://gitlab.com/a/b.git",
            "{{ forge.cli_tool }} {{ forge.pr_command }} create",
            "glab mr create",
        ),
        (None, "{{ forge.cli_tool }} {{ forge.pr_command }} create", "  create"),
        (None, "{{ forge.type }}-{{ forge.prefix }}", "local-local"),
    ],
    ids=[
        X + "TestInjectForgeVariables_ResolvePlaceholders_GitHub",
        X + "TestForgeVariables_AllForgeTypes_ConsistentStructure/GitLab",
        X + "TestInjectForgeVariables_LocalTemplateResolution/cli_tool_empty",
        X + "TestInjectForgeVariables_LocalTemplateResolution/type-prefix",
    ],
)
def test_forge_templates(tmp_path: Path, remote: str | None, template: str, rendered: str) -> None:
    forge = detect(_repo(tmp_path, remote)).variables()
    assert render_text(template, {"forge": forge}).text == rendered


def test_metadata_forge_overrides_without_a_remote(tmp_path: Path) -> None:
    """X:TestInjectForgeVariables_Local (from `metadata.forge: local`) and the override:
    swell honours `metadata.forge` even without a remote (Wave ignores it then:
    deliberate, WAVE.md §8)."""
    assert detect(_repo(tmp_path, None), "github").type == "github"
    assert detect(_repo(tmp_path, "https://github.com/a/b.git"), "local").type == "local"
