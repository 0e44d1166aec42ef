"""A stand-in forge for the work-source tests: a JSON file of issues per repository
(`{"o/r": [{"number": 1, "title": "...", "labels": ["ready"], "state": "open"}]}`),
which a test edits between polls, and stand-in `gh`, `glab` and `tea` scripts on PATH
that answer `issue(s) list` from it in each real CLI's JSON shape (gh: labels as
[{name}], `url`; glab: `iid`, `web_url`, labels as names, state `opened`; tea: `index`,
labels as one string) and log their argv."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TOOLS = ("gh", "glab", "tea")


def install(bin_dir: Path, issues: Path) -> Path:
    """Write the stand-in CLIs into `bin_dir` (returned, for the front of PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve().parent
    for tool in TOOLS:
        script = bin_dir / tool
        script.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(here)!r})\n"
            "from forge_twin import main\n"
            f"sys.exit(main({tool!r}, sys.argv[1:], {str(issues)!r}))\n"
        )
        script.chmod(0o755)
    return bin_dir


def calls(issues: Path) -> list[list[str]]:
    log = issues.with_suffix(".log")
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


def _flag(args: list[str], name: str, default: str = "") -> str:
    return args[args.index(name) + 1] if name in args else default


def main(tool: str, args: list[str], issues_file: str) -> int:
    path = Path(issues_file)
    with path.with_suffix(".log").open("a") as log:
        log.write(json.dumps([tool, *args]) + "\n")
    if args[:2] not in (["issue", "list"], ["issues", "list"]):
        print(f"{tool}: unknown command {' '.join(args[:2])}", file=sys.stderr)
        return 1
    repo = _flag(args, "--repo", "o/r")
    every = json.loads(path.read_text()) if path.exists() else {}
    if repo not in every:
        print(f"{tool}: repository {repo} not found", file=sys.stderr)
        return 1
    label = _flag(args, "--labels" if tool == "tea" else "--label")
    state = _flag(args, "--state", "open")
    if tool == "glab":
        state = "closed" if "--closed" in args else "all" if "--all" in args else "open"
    found = [
        i
        for i in every[repo]
        if (not label or label in i["labels"]) and state in ("all", i.get("state", "open"))
    ]
    print(json.dumps([_shape(tool, repo, i) for i in found]))
    return 0


def _shape(tool: str, repo: str, issue: dict[str, Any]) -> dict[str, Any]:
    n, labels, state = issue["number"], issue["labels"], issue.get("state", "open")
    title = issue.get("title", f"issue {n}")
    if tool == "gh":
        url = f"https://github.com/{repo}/issues/{n}"
        named = [{"name": x} for x in labels]
        return {"number": n, "title": title, "url": url, "labels": named, "state": state.upper()}
    if tool == "glab":
        url = f"https://gitlab.com/{repo}/-/issues/{n}"
        glab_state = "opened" if state == "open" else state
        return {"iid": n, "title": title, "web_url": url, "labels": labels, "state": glab_state}
    url = f"https://gitea.com/{repo}/issues/{n}"
    return {"index": str(n), "title": title, "url": url, "labels": " ".join(labels), "state": state}
