"""Work sources as a dispatcher sees them: items with stable ids from a JSONL queue, a
directory, and forge issues through stand-in gh/glab/tea CLIs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swell.service.sources import SourceError, open_source

from .forge_twin import calls, install


def test_a_queue_file_gives_an_item_per_line_with_its_stable_id(tmp_path: Path) -> None:
    queue = tmp_path / "queue.jsonl"
    queue.write_text(
        json.dumps({"id": "a", "input": "fix the login", "labels": {"team": "web"}})
        + "\n"
        + "plain text item\n"
        + json.dumps({"id": 7, "input": {"issue": 7}})
        + "\n"
        + '{"id": "half'  # still being written: read on a later poll
    )
    items = open_source("file:queue.jsonl", tmp_path).poll()
    assert [(i.id, i.input) for i in items] == [
        ("a", "fix the login"),
        ("plain text item", "plain text item"),
        ("7", '{"issue": 7}'),
    ]
    assert items[0].labels == {"team": "web"}


def test_a_missing_queue_file_is_empty_and_an_item_without_id_is_an_error(
    tmp_path: Path,
) -> None:
    assert open_source("file:queue.jsonl", tmp_path).poll() == []
    (tmp_path / "queue.jsonl").write_text('{"input": "no id"}\n')
    with pytest.raises(SourceError, match="line 1 has no `id`"):
        open_source("file:queue.jsonl", tmp_path).poll()


def test_a_directory_gives_an_item_per_visible_file(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "b.txt").write_text("second")
    (inbox / "a.txt").write_text("first")
    (inbox / ".c.txt").write_text("being written")
    for uri in ("dir:inbox", "file:inbox"):
        items = open_source(uri, tmp_path).poll()
        assert [(i.id, i.input) for i in items] == [("a.txt", "first"), ("b.txt", "second")]


@pytest.mark.parametrize(
    ("kind", "url"),
    [
        ("github", "https://github.com/o/r/issues/{n}"),
        ("gitlab", "https://gitlab.com/o/r/-/issues/{n}"),
        ("gitea", "https://gitea.com/o/r/issues/{n}"),
    ],
)
def test_forge_issues_through_the_forge_cli(
    kind: str, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    issues = tmp_path / "issues.json"
    issues.write_text(
        json.dumps(
            {
                "o/r": [
                    {"number": 1, "labels": ["ready", "bug"]},
                    {"number": 2, "labels": ["later"]},
                    {"number": 3, "labels": ["ready"], "state": "closed"},
                ]
            }
        )
    )
    bin_dir = install(tmp_path / "bin", issues)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    source = open_source(f"{kind}:repo=o/r,label=ready,state=open", tmp_path)
    [item] = source.poll()
    assert (item.id, item.input) == ("1", url.format(n=1))
    assert item.tags == ("ready", "bug")
    assert item.labels["forge"] == kind and item.labels["repo"] == "o/r"
    [argv] = calls(issues)
    assert argv[0] == {"github": "gh", "gitlab": "glab", "gitea": "tea"}[kind]
    assert "o/r" in argv and "ready" in argv


def test_a_failing_forge_cli_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    issues = tmp_path / "issues.json"
    issues.write_text("{}")
    monkeypatch.setenv("PATH", f"{install(tmp_path / 'bin', issues)}:/usr/bin:/bin")
    with pytest.raises(SourceError, match=r"`gh issue list` failed \(exit 1\): .*o/x not found"):
        open_source("github:repo=o/x", tmp_path).poll()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(SourceError, match="needs the `glab` CLI on PATH"):
        open_source("gitlab:repo=o/r", tmp_path).poll()


def test_an_unknown_source_kind_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"unknown work source kind `jira` \(known: file, dir"):
        open_source("jira:project=X", tmp_path)
    with pytest.raises(SourceError, match="`label` is not key=value"):
        open_source("github:label", tmp_path)
