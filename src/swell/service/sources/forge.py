"""Forge issues through the forge's own CLI: `github:` (gh), `gitlab:` (glab),
`gitea:` (tea). Parameters: `repo=OWNER/NAME` (else the CLI's current repository),
`label=L`, `state=open|closed|all` (open), `limit=N` (100). The CLI's login is the
credential: swell reads no token. An item is an issue: its number is the id, its URL
the input (as in Wave's `github:` source), its labels the item's tags."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from swell.service.sources.base import SourceError, WorkItem

POLL_TIMEOUT = 60.0  # seconds one listing may take


@dataclass(frozen=True)
class Forge:
    name: str
    cli: str

    def argv(self, p: dict[str, str]) -> list[str]:
        limit, state = p.get("limit", "100"), p.get("state", "open")
        if self.cli == "gh":
            args = ["issue", "list", "--state", state, "--limit", limit]
            args += ["--json", "number,title,url,labels,state"]
            args += ["--label", p["label"]] if p.get("label") else []
        elif self.cli == "glab":
            args = ["issue", "list", "--per-page", limit, "--output", "json"]
            args += {"open": [], "closed": ["--closed"], "all": ["--all"]}.get(state, [])
            args += ["--label", p["label"]] if p.get("label") else []
        else:  # tea
            args = ["issues", "list", "--state", state, "--limit", limit, "--output", "json"]
            args += ["--fields", "index,title,url,labels,state"]
            args += ["--labels", p["label"]] if p.get("label") else []
        return [self.cli, *args, *(["--repo", p["repo"]] if p.get("repo") else [])]


FORGES = {
    "github": Forge("github", "gh"),
    "gitlab": Forge("gitlab", "glab"),
    "gitea": Forge("gitea", "tea"),
}


class ForgeIssues:
    """The issues one listing of the forge CLI gives."""

    def __init__(self, forge: Forge, p: dict[str, str], uri: str) -> None:
        self.forge, self.params, self.uri = forge, p, uri
        if not p.get("limit", "1").isdigit():
            raise SourceError(f"work source {uri}: limit must be a number")

    def poll(self) -> list[WorkItem]:
        argv = self.forge.argv(self.params)
        if shutil.which(argv[0]) is None:
            raise SourceError(
                f"work source {self.uri} needs the `{argv[0]}` CLI on PATH (logged in)"
            )
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=POLL_TIMEOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SourceError(f"work source {self.uri}: `{argv[0]}` took over 60 s") from None
        if done.returncode != 0:
            why = (done.stderr or done.stdout).strip().splitlines()
            raise SourceError(
                f"work source {self.uri}: `{' '.join(argv[:3])}` failed "
                f"(exit {done.returncode}): {why[-1] if why else 'no output'}"
            )
        try:
            issues = json.loads(done.stdout or "[]")
        except json.JSONDecodeError:
            raise SourceError(f"work source {self.uri}: `{argv[0]}` did not print JSON") from None
        if not isinstance(issues, list):
            raise SourceError(f"work source {self.uri}: `{argv[0]}` did not print a list")
        return [self._item(i) for i in issues if isinstance(i, dict)]

    def _item(self, issue: dict[str, Any]) -> WorkItem:
        number = issue.get("number", issue.get("iid", issue.get("index")))
        url = str(issue.get("url") or issue.get("web_url") or issue.get("html_url") or "")
        tags = _tags(issue.get("labels"))
        labels = {
            "forge": self.forge.name,
            "repo": self.params.get("repo", ""),
            "kind": "issue",
            "title": str(issue.get("title", "")),
            "labels": ",".join(tags),
            "state": str(issue.get("state", "")).lower(),
        }
        return WorkItem(id=str(number), input=url or str(number), labels=labels, tags=tags)


def _tags(value: object) -> tuple[str, ...]:
    """gh: [{name}], glab: [name], tea: "a,b" or [name]."""
    if isinstance(value, str):
        return tuple(t.strip() for t in value.replace(" ", ",").split(",") if t.strip())
    if isinstance(value, list):
        return tuple(str(v.get("name", "")) if isinstance(v, dict) else str(v) for v in value)
    return ()
