"""Forge detection on real git repositories (one remote URL per forge, no network), the
skills an agent is given, Wave's sub-agent hint, and outcome JSON paths."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swell.engine.agent import skills
from swell.engine.visit import deliverables, forge


def _repo(path: Path, *remotes: tuple[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for name, url in remotes:
        subprocess.run(["git", "-C", str(path), "remote", "add", name, url], check=True)
    return path


@pytest.mark.parametrize(
    ("url", "kind", "host", "owner", "repo", "cli", "prefix", "command"),
    [
        ("git@github.com:acme/rocket.git", "github", "github.com", "acme", "rocket", "gh", "gh", "pr"),
        ("https://gitlab.com/acme/sub/rocket", "gitlab", "gitlab.com", "acme", "sub/rocket", "glab", "gl", "mr"),
        ("ssh://git@gitea.example.org:2222/acme/rocket.git", "gitea", "gitea.example.org", "acme", "rocket", "tea", "gt", "pr"),
        ("https://forgejo.example.org/acme/rocket.git", "forgejo", "forgejo.example.org", "acme", "rocket", "tea", "gt", "pr"),
        ("https://codeberg.org/acme/rocket.git", "codeberg", "codeberg.org", "acme", "rocket", "tea", "gt", "pr"),
        ("https://user:tok@bitbucket.org/acme/rocket.git", "bitbucket", "bitbucket.org", "acme", "rocket", "bb", "bb", "pr"),
        ("https://git.example.org/acme/rocket.git", "unknown", "git.example.org", "acme", "rocket", "", "", ""),
    ],
)  # fmt: skip
def test_each_forge_is_detected_from_origin(
    tmp_path: Path, url: str, kind: str, host: str, owner: str, repo: str, cli: str,
    prefix: str, command: str,
) -> None:  # fmt: skip
    root = _repo(tmp_path / "r", ("upstream", "https://github.com/other/x.git"), ("origin", url))
    got = forge.detect(root)
    assert (got.type, got.host, got.owner, got.repo) == (kind, host, owner, repo)
    assert (got.cli_tool, got.prefix, got.pr_command) == (cli, prefix, command)
    assert got.pr_term == (
        "Merge Request" if kind == "gitlab" else "" if not cli else "Pull Request"
    )


def test_no_remote_is_local_and_overrides_and_host_lists_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = _repo(tmp_path / "bare")
    assert forge.detect(bare) == forge.info("local")
    assert forge.detect(bare).prefix == "local"
    assert forge.detect(tmp_path / "not-a-repo").type == "local"
    assert forge.detect(bare, "gitlab").cli_tool == "glab"  # honoured without a remote
    hosted = _repo(tmp_path / "h", ("origin", "https://git.example.org/a/b.git"))
    assert forge.detect(hosted, "none").type == "local"
    monkeypatch.setenv("WAVE_FORGEJO_HOSTS", "other.org, git.example.org")
    assert forge.detect(hosted).type == "forgejo"
    only = _repo(tmp_path / "o", ("mirror", "git@github.com:a/b.git"))
    assert forge.detect(only).slug == "a/b"  # no origin: the first fetch URL


def test_feature_numbers_follow_wave() -> None:
    assert forge.feature_number("018-enhanced-progress") == "018-enhanced-progress"
    assert forge.feature_number("feature/12-search") == "feature/012-search"
    assert forge.feature_number("main") == ""


def test_scope_warnings_name_the_token_and_what_it_needs() -> None:
    github = forge.info("github", "github.com", "a", "b")
    wanted = {"writer": ["issues:write", "packages:read@PKG_TOKEN"], "reader": []}
    found = forge.scope_warnings(github, wanted, {"PKG_TOKEN": "github_pat_x"})
    assert found == [
        "persona 'writer' (token_scopes issues:write): no github token is set "
        "(GH_TOKEN or GITHUB_TOKEN); its forge commands will fail",
        "persona 'writer' (token_scopes packages:read): $PKG_TOKEN is a fine-grained token, "
        "whose permissions cannot be read; it needs read:packages",
    ]
    gitlab = forge.info("gitlab", "gitlab.com")
    assert forge.scope_warnings(gitlab, {"w": ["repos:write"]}, {"GL_TOKEN": "x"}) == [
        "persona 'w' (token_scopes repos:write): $GL_TOKEN is set; swell does not ask "
        "gitlab.com what it holds; it needs write_repository"
    ]
    assert forge.scope_warnings(forge.info("local"), wanted, {}) == []
    assert (
        "cannot check tokens of forge 'bitbucket'"
        in forge.scope_warnings(forge.info("bitbucket"), wanted, {})[0]
    )


def test_skills_are_copied_where_the_adapter_looks_and_listed(tmp_path: Path) -> None:
    root, ws = tmp_path / "project", tmp_path / "ws"
    for base, name in (("skills", "lint"), (".agents/skills", "lint"), (".agents/skills", "docs")):
        (root / base / name).mkdir(parents=True)
        (root / base / name / "SKILL.md").write_text(
            f"---\ndescription: {base} {name}\n---\n# {name}\n"
        )
    (root / "skills" / "lint" / "rules.txt").write_text("no tabs\n")
    (root / "skills" / "linked").symlink_to(root / ".agents" / "skills" / "docs")
    assert skills.find(root, "linked") is None  # a linked directory is not used
    given = skills.provide(root, ws, ["lint", "docs", "gone"], ".claude/skills")
    assert [(s.name, s.description) for s in given] == [
        ("lint", "skills lint"),  # skills/ wins over .agents/skills/
        ("docs", ".agents/skills docs"),
    ]
    assert (ws / ".claude/skills/lint/rules.txt").read_text() == "no tabs\n"
    assert "- **docs**: .agents/skills docs (see `.claude/skills/docs/SKILL.md`)" in (
        skills.section(given, ".claude/skills")
    )
    assert skills.rendered(["{{ project.skill }}", "lint", "lint"], {"project": {}}) == ["lint"]


def test_the_sub_agent_hint_is_wave_s_and_capped() -> None:
    assert skills.concurrency_hint(None) == skills.concurrency_hint(1) == ""
    assert "spawn up to 3 concurrent sub-agents" in skills.concurrency_hint(3)
    assert "spawn up to 10 concurrent" in skills.concurrency_hint(25)


def test_outcome_paths_read_values_as_wave_prints_them() -> None:
    data = {"a": {"n": 2.0, "ok": True, "list": [{"u": "x"}, {"u": "y"}]}, "empty": []}
    assert deliverables.text(deliverables.walk(data, ".a.n")) == "2"
    assert deliverables.text(deliverables.walk(data, "a.ok")) == "true"
    assert deliverables.text(deliverables.walk(data, ".a.list[1].u")) == "y"
    assert deliverables.text(deliverables.walk(data, ".a.list[0]")) == '{"u":"x"}'
    assert deliverables.extract_all(data, ".a.list[*].u") == ["x", "y"]
    with pytest.raises(deliverables.EmptyList):
        deliverables.walk(data, ".empty[0]")
    with pytest.raises(deliverables.PathError, match="not found"):
        deliverables.walk(data, ".b")
