"""A run's remote is recorded in its checkpoint events (workspace/remote.py): never
with a secret in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from swell.workspace.checkpoint import Checkpoints
from swell.workspace.remote import fetch, public
from swell.workspace.workspace import WorkspaceError


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        ("/srv/git/run.git", "/srv/git/run.git"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
        ("ssh://git@host:2222/o/r.git", "ssh://git@host:2222/o/r.git"),
        ("https://host/o/r.git", "https://host/o/r.git"),
        ("https://x-access-token:ghp_SECRET@github.com/o/r.git", "https://github.com/o/r.git"),
        ("https://ghp_SECRET@github.com/o/r.git", "https://github.com/o/r.git"),
        ("ssh://me:SECRET@host/r.git", "ssh://host/r.git"),
        ("https://host/r.git?token=SECRET#x", "https://host/r.git"),
    ],
)
def test_a_remote_is_recorded_without_credentials(given: str, recorded: str) -> None:
    assert public(given) == recorded
    assert "SECRET" not in public(given)


def test_a_remote_that_reads_as_an_option_is_refused_before_git_sees_it(tmp_path: Path) -> None:
    repo = Checkpoints(tmp_path / "checkpoints")
    with pytest.raises(WorkspaceError, match="not a repository"):
        fetch(repo, "--upload-pack=touch /tmp/pwned", ["a" * 40])
