"""Stand-in forge CLIs (`gh`, `glab`, `tea`, `bb`) and a stand-in `go`, put on PATH for
end-to-end runs of Wave-format pipelines.

`install(bin_dir, log)` writes one small Python script per tool; each answers the
subcommands Wave's pipelines and personas call (issue view/list/create/comment/edit,
pr/mr view/list/create/diff/comment/review, repo view, api, auth status, run list)
with canned JSON or text shaped like the real tool's, and appends its argv to `log`
(JSON lines) so a report can say which forge commands a run made. Nothing is sent
anywhere. `go test/build/vet/...` succeed with plausible output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

TOOLS = ("gh", "glab", "tea", "bb", "go")
REPO = "re-cinq/wave"
HOST = {"gh": "github.com", "glab": "gitlab.com", "tea": "gitea.com", "bb": "bitbucket.org"}


def install(bin_dir: Path, log: Path) -> Path:
    """Write the stand-ins into `bin_dir` (created); returns it, for the front of PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    here = Path(__file__).resolve().parent
    for tool in TOOLS:
        script = bin_dir / tool
        script.write_text(
            f"#!{_python()}\n"
            "import sys\n"
            f"sys.path.insert(0, {str(here)!r})\n"
            "from forge_standins import main\n"
            f"sys.exit(main({tool!r}, sys.argv[1:], {str(log)!r}))\n"
        )
        script.chmod(0o755)
    return bin_dir


def calls(log: Path) -> list[list[str]]:
    """The commands the stand-ins were run with, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _python() -> str:
    """The interpreter the stand-ins run on: the system's, which a sandboxed step can see
    (swell's own may live under the user's HOME, hidden there); they need only the
    standard library."""
    for found in ("/usr/bin/python3", sys.executable):
        if Path(found).exists():
            return found
    return sys.executable


def main(tool: str, args: list[str], log: str) -> int:
    try:
        with open(log, "a") as out:
            out.write(json.dumps([tool, *args]) + "\n")
    except OSError:  # in swell's sandbox the log (outside the workspace) is read-only
        pass
    if tool == "go":
        return _go(args)
    answer = _forge(tool, args)
    if answer is None:
        return 0
    if isinstance(answer, str):
        print(answer)
        return 0
    return _print_json(answer, args)


# --------------------------------------------------------------------------- forges


def _issue(tool: str, number: int = 42) -> dict[str, Any]:
    host = HOST.get(tool, "github.com")
    return {
        "number": number,
        "iid": number,
        "index": number,
        "id": 1000 + number,
        "title": "Add webhook support for pipeline completion events",
        "body": "As a user I want a webhook called when a pipeline completes.\n\n"
        "## Acceptance criteria\n- a POST is sent with the run id and status\n",
        "description": "As a user I want a webhook called when a pipeline completes.",
        "state": "OPEN",
        "labels": [{"name": "enhancement"}],
        "author": {"login": "octocat", "username": "octocat"},
        "assignees": [],
        "comments": [],
        "url": f"https://{host}/{REPO}/issues/{number}",
        "web_url": f"https://{host}/{REPO}/issues/{number}",
        "html_url": f"https://{host}/{REPO}/issues/{number}",
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-02T00:00:00Z",
        "milestone": None,
    }


def _pr(tool: str, number: int = 42) -> dict[str, Any]:
    host = HOST.get(tool, "github.com")
    kind = "merge_requests" if tool == "glab" else "pull"
    return {
        **_issue(tool, number),
        "title": "Fix the pipeline scheduler's retry delay",
        "body": "Fixes the retry delay computation.",
        "headRefName": "fix/retry-delay",
        "baseRefName": "main",
        "source_branch": "fix/retry-delay",
        "target_branch": "main",
        "head": {"ref": "fix/retry-delay", "sha": "0" * 40},
        "base": {"ref": "main"},
        "isDraft": False,
        "merged": False,
        "mergeable": "MERGEABLE",
        "additions": 12,
        "deletions": 3,
        "changedFiles": 1,
        "files": [{"path": "internal/pipeline/executor.go", "additions": 12, "deletions": 3}],
        "commits": [{"oid": "0" * 40, "messageHeadline": "fix: retry delay"}],
        "reviews": [],
        "reviewDecision": "",
        "statusCheckRollup": [],
        "url": f"https://{host}/{REPO}/{kind}/{number}",
        "web_url": f"https://{host}/{REPO}/{kind}/{number}",
        "html_url": f"https://{host}/{REPO}/{kind}/{number}",
    }


DIFF = """diff --git a/internal/pipeline/executor.go b/internal/pipeline/executor.go
index 1111111..2222222 100644
--- a/internal/pipeline/executor.go
+++ b/internal/pipeline/executor.go
@@ -10,7 +10,7 @@ func retryDelay(attempt int) time.Duration {
-\treturn time.Second * time.Duration(attempt)
+\treturn time.Second * time.Duration(1<<attempt)
 }
"""


def _forge(tool: str, args: list[str]) -> Any:
    words = [a for a in args if not a.startswith("-")]
    noun = words[0] if words else ""
    verb = words[1] if len(words) > 1 else ""
    number = next((int(w) for w in words[2:] if w.isdigit()), 42)
    host = HOST.get(tool, "github.com")
    noun = {"issues": "issue", "pulls": "pr", "pull": "pr", "mr": "pr", "prs": "pr"}.get(noun, noun)
    if noun == "auth":
        return f"Logged in to {host} as octocat (stand-in)"
    if noun == "api":
        return _api(tool, args)
    if noun == "repo":
        return {
            "name": "wave",
            "owner": {"login": "re-cinq"},
            "nameWithOwner": REPO,
            "full_name": REPO,
            "url": f"https://{host}/{REPO}",
            "defaultBranchRef": {"name": "main"},
            "default_branch": "main",
            "description": "Wave",
        }
    if noun in ("run", "ci", "pipeline"):
        return []
    if noun in ("label", "labels"):
        return [] if verb == "list" else "ok"
    if noun in ("issue", "pr"):
        item = _issue(tool, number) if noun == "issue" else _pr(tool, number)
        if verb in ("view", "show", ""):
            return item
        if verb == "list":
            return [item, {**item, "number": number + 1, "iid": number + 1, "index": number + 1}]
        if verb == "diff":
            return DIFF
        if verb == "create":
            kind = "issues" if noun == "issue" else ("merge_requests" if tool == "glab" else "pull")
            return f"https://{host}/{REPO}/{kind}/{1000 + number}"
        if verb in ("comment", "comments", "note", "review"):
            if verb == "comments" and "--output" in args:
                return []
            return f"{item['url']}#issuecomment-1"
        if verb in ("edit", "update", "close", "reopen", "merge", "ready", "checkout"):
            return item["url"]
        if verb == "checks":
            return "All checks were successful"
        return item
    return ""


def _api(tool: str, args: list[str]) -> Any:
    path = next((a for a in args[1:] if not a.startswith("-") and "/" in a), "")
    method = "GET"
    for flag in ("--method", "-X"):
        if flag in args and args.index(flag) + 1 < len(args):
            method = args[args.index(flag) + 1].upper()
    last = path.rstrip("/").split("/")[-1] if path else ""
    if method != "GET":
        return {"id": 1, "html_url": f"https://github.com/{REPO}/issues/42#issuecomment-1"}
    if last.isdigit():
        return _pr(tool, int(last)) if "/pulls/" in path else _issue(tool, int(last))
    if last in ("comments", "reviews", "files", "labels", "issues", "pulls", "commits"):
        return []
    return {}


def _print_json(answer: Any, args: list[str]) -> int:
    fields = _flag(args, "--json")
    if isinstance(answer, dict) and fields:
        wanted = [f for f in fields.split(",") if f]
        answer = {k: answer.get(k) for k in wanted}
    elif isinstance(answer, list) and fields:
        wanted = [f for f in fields.split(",") if f]
        answer = [{k: item.get(k) for k in wanted} for item in answer]
    text = json.dumps(answer)
    expr = _flag(args, "--jq") or _flag(args, "-q")
    if expr:
        done = subprocess.run(["jq", "-r", expr], input=text, capture_output=True, text=True)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return done.returncode
    print(text)
    return 0


def _flag(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


# --------------------------------------------------------------------------- go


def _go(args: list[str]) -> int:
    sub = args[0] if args else ""
    if sub == "version":
        print("go version go1.25.0 linux/amd64")
    elif sub == "test":
        for pkg in ("internal/pipeline", "internal/contract", "internal/manifest"):
            print(f"ok  \tgithub.com/{REPO}/{pkg}\t0.042s")
    elif sub == "list":
        for pkg in ("internal/pipeline", "internal/contract", "internal/manifest"):
            print(f"github.com/{REPO}/{pkg}")
    elif sub == "env":
        print('GOPATH="/tmp/go"')
    return 0
