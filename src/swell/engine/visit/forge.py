"""Forge detection and the git variables of a run (WAVE.md §7, §3.11).

`detect(root, override)` reads the project's git remote (origin's fetch URL, else the
first fetch URL) and names the forge that hosts it: github, gitlab, bitbucket, gitea,
forgejo, codeberg; `local` without a remote, `unknown` for a host it cannot classify.
Unlike Wave, swell never probes an unknown host over the network: set
`metadata.forge` in wave.yaml, or list the host in `WAVE_GITEA_HOSTS` /
`WAVE_FORGEJO_HOSTS`. `metadata.forge` is honoured with or without a remote.

`git_variables(root)` gives `branch_name` and `feature_num` as Wave derives them.
A run looks each up once, when a template first asks (`RunPlan.forge`,
`RunPlan.branch`), so every visit of a run sees the same values.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from swell.manifest.template_names import FORGE_TYPES

GIT_TIMEOUT = 5.0
# what each forge's CLI, pipeline prefix and pull-request words are (Wave's table)
_META: dict[str, tuple[str, str, str, str]] = {
    "github": ("gh", "gh", "Pull Request", "pr"),
    "gitlab": ("glab", "gl", "Merge Request", "mr"),
    "bitbucket": ("bb", "bb", "Pull Request", "pr"),
    "gitea": ("tea", "gt", "Pull Request", "pr"),
    "forgejo": ("tea", "gt", "Pull Request", "pr"),
    "codeberg": ("tea", "gt", "Pull Request", "pr"),
    "local": ("", "local", "", ""),
}
KNOWN = (*FORGE_TYPES, "unknown")
# pipelines, tools and prompts that only work on a forge (Wave refuses them under local)
FORGE_PREFIXES = ("gh-", "gl-", "bb-", "gt-")
FORGE_CLIS = ("gh", "glab", "tea", "bb")


@dataclass(frozen=True)
class ForgeInfo:
    """`{{ forge.* }}`: what hosts the project's repository."""

    type: str
    host: str = ""
    owner: str = ""
    repo: str = ""
    cli_tool: str = ""
    prefix: str = ""
    pr_term: str = ""
    pr_command: str = ""

    def variables(self) -> dict[str, str]:
        return asdict(self)

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.repo}" if self.owner and self.repo else ""


def info(forge_type: str, host: str = "", owner: str = "", repo: str = "") -> ForgeInfo:
    """A forge of `forge_type` with its CLI and pull-request words."""
    cli, prefix, term, command = _META.get(forge_type, ("", "", "", ""))
    return ForgeInfo(forge_type, host, owner, repo, cli, prefix, term, command)


def parse_remote(url: str) -> tuple[str, str, str] | None:
    """(host, owner, repo) of an ssh://, scp-like (`git@host:owner/repo.git`) or
    http(s) URL; None when it is none of these."""
    url = url.strip()
    if not url:
        return None
    if url.startswith("ssh://"):
        return _host_path(url[len("ssh://") :].split("@", 1)[-1])
    for scheme in ("https://", "http://"):
        if url.startswith(scheme):
            return _host_path(url[len(scheme) :])
    if "@" in url and ":" in url.split("@", 1)[1]:
        host, path = url.split("@", 1)[1].split(":", 1)
        parts = path.removesuffix(".git").split("/", 1)
        return (host, parts[0], parts[1]) if len(parts) == 2 else (host, "", "")
    return None


def _host_path(rest: str) -> tuple[str, str, str]:
    head, _, path = rest.partition("/")
    host = head.rsplit("@", 1)[-1]  # user:token@host
    host = re.sub(r":\d+$", "", host)  # a port is not part of the host's name
    parts = path.removesuffix(".git").removesuffix("/").split("/", 1)
    owner = parts[0] if parts else ""
    repo = parts[1] if len(parts) > 1 else ""
    return host, owner, repo


def _listed(host: str, variable: str) -> bool:
    names = {h.strip().lower() for h in os.environ.get(variable, "").split(",")}
    return host in names


def classify(host: str) -> str:
    """The forge of a host name, by Wave's rules without its network probes."""
    h = host.lower()
    if _listed(h, "WAVE_GITEA_HOSTS"):
        return "gitea"
    if _listed(h, "WAVE_FORGEJO_HOSTS"):
        return "forgejo"
    for name, domain in (("github", "github.com"), ("gitlab", "gitlab.com"),
                         ("bitbucket", "bitbucket.org")):  # fmt: skip
        if h == domain or h.endswith("." + domain):
            return name
    if "gitea" in h:
        return "gitea"
    if "forgejo" in h:
        return "forgejo"
    if h == "codeberg.org" or h.endswith(".codeberg.org"):
        return "codeberg"
    return "unknown"


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, or it hung
    return done.stdout if done.returncode == 0 else None


def remote_url(root: Path) -> str:
    """origin's fetch URL, else the first remote's; "" without one."""
    out = _git(root, "remote", "-v") or ""
    first = ""
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[2] != "(fetch)":
            continue
        if fields[0] == "origin":
            return fields[1]
        first = first or fields[1]
    return first


def detect(root: Path, override: str | None = None) -> ForgeInfo:
    """The forge of the repository at `root` (see the module doc)."""
    forced = (override or "").strip().lower()
    if forced in ("local", "none"):
        return info("local")
    url = remote_url(root)
    parsed = parse_remote(url) if url else None
    if forced in KNOWN:
        return info(forced, *(parsed or ("", "", "")))
    if not url:
        return info("local")
    if parsed is None:
        return info("unknown")
    return info(classify(parsed[0]), *parsed)


def feature_number(branch: str) -> str:
    """Wave's feature number: the whole branch for `NNN-name`; for `x/12-name` the
    branch with that number padded to three digits; else ""."""
    if re.match(r"^\d{3}-", branch):
        return branch
    found = re.search(r"(\d+)[-_]", branch)
    if found:
        return branch.replace(found.group(1), f"{int(found.group(1)):03d}")
    return ""


def git_variables(root: Path) -> dict[str, str]:
    """`branch_name` (the current branch of the project) and `feature_num`."""
    branch = _head_branch(root)
    if branch is None:
        # symbolic-ref names a branch without commits yet too; a detached HEAD reads "HEAD"
        found = _git(root, "symbolic-ref", "--short", "-q", "HEAD")
        branch = (found or _git(root, "rev-parse", "--abbrev-ref", "HEAD") or "").strip()
    return {"branch_name": branch, "feature_num": feature_number(branch)}


def _head_branch(root: Path) -> str | None:
    """What `git symbolic-ref --short HEAD` says, read from the repository's HEAD file
    (every run asks, and a git process costs milliseconds); None where only git
    itself can tell (GIT_DIR set, a HEAD that is not a branch or a commit)."""
    if "GIT_DIR" in os.environ:
        return None
    for folder in (root.resolve(), *root.resolve().parents):
        dot = folder / ".git"
        try:
            if dot.is_file():  # a worktree or submodule: `gitdir: PATH`
                pointer = dot.read_text(encoding="utf-8").strip()
                if not pointer.startswith("gitdir:"):
                    return None
                dot = folder / pointer.removeprefix("gitdir:").strip()
            elif not dot.is_dir():
                continue
            head = (dot / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if head.startswith("ref: refs/heads/"):
            return head.removeprefix("ref: refs/heads/")
        return "HEAD" if re.fullmatch(r"[0-9a-f]{40,64}", head) else None
    return ""  # not in a repository: git would fail, and the branch is ""


def local_guard(pipeline_name: str, uses_cli: list[str], tools: list[str]) -> list[str]:
    """Why a pipeline cannot run without a forge (Wave's guards for `local`):
    a forge-prefixed pipeline name, steps whose prompt or script uses
    `{{ forge.cli_tool }}` / `{{ forge.pr_command }}` (`uses_cli`: their ids), and
    allowed tools that run a forge CLI (`tools`: `Bash(gh ...)` entries)."""
    found = []
    if pipeline_name.startswith(FORGE_PREFIXES):
        found.append(f"pipeline '{pipeline_name}' is named for a forge")
    if uses_cli:
        found.append(f"steps {', '.join(uses_cli)} run the forge's CLI ({{{{ forge.cli_tool }}}})")
    if tools:
        found.append(f"allowed tools {', '.join(sorted(set(tools)))} run a forge CLI")
    return found


def runs_forge_cli(tool: str) -> bool:
    """Whether an allowed-tools entry is a shell limited to a forge CLI (`Bash(gh *)`)."""
    found = re.fullmatch(r"\s*Bash\(\s*([A-Za-z]+)\b.*\)\s*", tool)
    return found is not None and found.group(1) in FORGE_CLIS


# where each forge's token is looked for, in order (Wave's token resolution)
TOKEN_VARS: dict[str, tuple[str, ...]] = {
    "github": ("GH_TOKEN", "GITHUB_TOKEN"),
    "gitlab": ("GITLAB_TOKEN", "GL_TOKEN"),
    "gitea": ("GITEA_TOKEN",),
    "forgejo": ("GITEA_TOKEN",),
    "codeberg": ("CODEBERG_TOKEN", "GITEA_TOKEN"),
    "bitbucket": ("BITBUCKET_TOKEN", "BB_TOKEN"),
}


def platform_scopes(forge_type: str, resource: str, level: str) -> list[str]:
    """What a token of this forge must hold for `resource:level` (Wave's table)."""
    write = level != "read"
    if forge_type == "github":
        if resource == "packages":
            return ["write:packages" if write else "read:packages"]
        return ["repo"]
    if forge_type == "gitlab":
        if resource == "repos":
            return ["write_repository" if write else "read_repository"]
        return ["api" if write else "read_api"]
    kind = {"issues": "issue", "pulls": "issue", "repos": "repository", "packages": "package"}
    if resource == "actions":
        return ["read:repository"]
    return [f"{'write' if write else 'read'}:{kind.get(resource, resource)}"]


def scope_warnings(
    forge: ForgeInfo, personas: dict[str, list[str]], env: dict[str, str]
) -> list[str]:
    """What can be said offline about the forge tokens the personas in use declare
    (`token_scopes`). Wave asks the forge's CLI what a token holds; swell does not call
    the network before a run, so it checks that a token is there and names the scopes
    the token must hold."""
    found: list[str] = []
    wanted = {name: scopes for name, scopes in personas.items() if scopes}
    if not wanted or forge.type == "local":
        return found
    if forge.type not in TOKEN_VARS or forge.type == "bitbucket":
        who = ", ".join(sorted(wanted))
        return [f"token_scopes of {who}: swell cannot check tokens of forge '{forge.type}'"]
    for name, scopes in sorted(wanted.items()):
        by_var: dict[tuple[str, ...], list[str]] = {}
        for scope in scopes:
            spec, _, named = scope.partition("@")
            by_var.setdefault((named,) if named else TOKEN_VARS[forge.type], []).append(spec)
        for names, specs in by_var.items():
            var = next((v for v in names if env.get(v)), None)
            need = sorted({p for s in specs for p in platform_scopes(forge.type, *s.split(":"))})
            what = f"persona '{name}' (token_scopes {', '.join(specs)})"
            if var is None:
                found.append(
                    f"{what}: no {forge.type} token is set ({' or '.join(names)}); "
                    "its forge commands will fail"
                )
            elif forge.type == "github" and env[var].startswith("github_pat_"):
                found.append(
                    f"{what}: ${var} is a fine-grained token, whose permissions cannot be "
                    f"read; it needs {', '.join(need)}"
                )
            else:
                found.append(
                    f"{what}: ${var} is set; swell does not ask {forge.host or forge.type} "
                    f"what it holds; it needs {', '.join(need)}"
                )
    return found


__all__ = [
    "TOKEN_VARS",
    "ForgeInfo",
    "classify",
    "detect",
    "feature_number",
    "git_variables",
    "info",
    "local_guard",
    "parse_remote",
    "platform_scopes",
    "remote_url",
    "runs_forge_cli",
    "scope_warnings",
]
