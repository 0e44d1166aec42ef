"""Skills (WAVE.md §1.5): directories with a SKILL.md that agents can use.

A skill NAME is `skills/NAME/SKILL.md` of the project, else `.agents/skills/NAME/`
(the first wins; a directory that is a symbolic link is not used). Before a run, every
skill wave.yaml (`skills`), a persona in use, the pipeline or a step names must exist
(names are rendered first; an empty result is dropped), and each `requires.skills`
entry's `check` must pass (after its `install`, if it has one), unless `optional`.
At each agent visit the skills of the run, its persona, its pipeline, `requires.skills`
and the step are copied into the workspace where the adapter looks for them
(`Capabilities.skills_dir`: `.claude/skills` for Claude Code, `.agents/skills` for
codex, gemini and opencode) and listed in the system prompt; an adapter without
skills gets a warning naming them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step
from swell.templates.render import render_text
from swell.workspace import safe

ROOTS = ("skills", ".agents/skills")
CHECK_TIMEOUT = 120.0


@dataclass(frozen=True)
class Skill:
    name: str
    path: Path  # the directory holding SKILL.md
    description: str


def find(root: Path, name: str) -> Skill | None:
    """The skill `name` of the project at `root`, or None."""
    if not name or "/" in name or name in (".", ".."):
        return None
    for base in ROOTS:
        folder = root / base / name
        if folder.is_symlink() or not (folder / "SKILL.md").is_file():
            continue
        return Skill(name, folder, _description(folder / "SKILL.md"))
    return None


def _description(path: Path) -> str:
    """The `description:` of SKILL.md's front matter, "" without one."""
    lines = safe.read_project_text(path).splitlines()
    if not lines or lines[0].strip() != "---":
        return ""
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, _, value = line.partition(":")
        if key.strip() == "description":
            return value.strip().strip("\"'")
    return ""


def rendered(names: list[str], namespace: Mapping[str, Any]) -> list[str]:
    """The names rendered (`{{ project.skill }}`), empty ones dropped, each once."""
    out = [render_text(n, namespace).text.strip() for n in names]
    return list(dict.fromkeys(n for n in out if n))


def wanted(
    project: Project, loaded: LoadedPipeline, step: Step, ns: Mapping[str, Any]
) -> list[str]:
    """The skills a step's agent gets: wave.yaml's, its persona's, the pipeline's,
    `requires.skills` and the step's."""
    persona = project.manifest.personas.get(step.persona or "")
    pipe = loaded.pipeline
    names = [*project.manifest.skills, *(persona.skills if persona else []), *pipe.skills,
             *pipe.requires.skills, *step.skills]  # fmt: skip
    return rendered(names, ns)


def missing(project: Project, loaded: LoadedPipeline) -> list[tuple[str, str]]:
    """Named skills that do not exist, as (where, name), before a run."""
    ns = {"project": dict(project.manifest.project)}
    found: list[tuple[str, str]] = []

    def check(where: str, names: list[str]) -> None:
        found.extend((where, n) for n in rendered(names, ns) if find(project.root, n) is None)

    check("wave.yaml `skills`", project.manifest.skills)
    personas = {s.persona for s in loaded.pipeline.steps if s.persona}
    for name in sorted(personas):
        persona = project.manifest.personas.get(name)
        if persona:
            check(f"persona '{name}'", persona.skills)
    check(f"pipeline '{loaded.name}'", loaded.pipeline.skills)
    for step in loaded.pipeline.steps:
        check(f"step '{step.id}'", step.skills)
    return found


def _shell(command: str, root: Path, timeout: float) -> bool:
    env = dict(os.environ)
    env["PATH"] = f"{env.get('PATH', '')}{os.pathsep}{Path.home() / '.local' / 'bin'}"
    shell = shutil.which("bash") or "/bin/sh"
    try:
        done = subprocess.run(
            [shell, "-c", command],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def check_required(project: Project, loaded: LoadedPipeline) -> tuple[list[str], list[str]]:
    """`requires.skills`: run each `check` (then `install` and `check` again); returns
    (problems, warnings): a required skill that still fails is a problem, an optional
    one a warning."""
    problems: list[str] = []
    warnings: list[str] = []
    timeout = project.manifest.runtime.timeouts.skill_install_seconds or CHECK_TIMEOUT
    for name, config in loaded.pipeline.requires.skills.items():
        if not config.check or _shell(config.check, project.root, timeout):
            continue
        installed = bool(config.install) and _shell(config.install or "", project.root, timeout)
        if installed and _shell(config.check, project.root, timeout):
            continue
        how = " (after its install)" if config.install else ""
        message = f"skill '{name}' (requires.skills): its check `{config.check}` failed{how}"
        (warnings if config.optional else problems).append(message)
    return problems, warnings


def provide(root: Path, workspace: Path, names: list[str], skills_dir: str) -> list[Skill]:
    """Copy the skills that exist into `workspace/skills_dir/NAME/`; returns them."""
    given = []
    for name in names:
        skill = find(root, name)
        if skill is None:
            continue  # checked before the run; a skill removed since is skipped
        target = workspace / skills_dir / name
        if target.is_symlink():
            target.unlink()
        shutil.copytree(skill.path, target, symlinks=True, dirs_exist_ok=True)
        given.append(skill)
    return given


def section(skills: list[Skill], skills_dir: str) -> str:
    """The system prompt's list of the skills an agent was given."""
    if not skills:
        return ""
    lines = ["", "## Available skills", "", "These skills are in your working directory:", ""]
    for s in skills:
        about = f": {s.description}" if s.description else ""
        lines.append(f"- **{s.name}**{about} (see `{skills_dir}/{s.name}/SKILL.md`)")
    return "\n".join(lines) + "\n"


MAX_AGENTS = 10  # Claude Code's practical limit of sub-agents (Wave caps the hint there)


def concurrency_hint(n: int | None) -> str:
    """Wave's hint for `max_concurrent_agents` > 1 (capped at 10); "" otherwise."""
    if not n or n <= 1:
        return ""
    count = min(n, MAX_AGENTS)
    return (
        f"\n## Agent concurrency\n\nYou may spawn up to {count} concurrent sub-agents or "
        "workers for this step.\n"
    )


__all__ = [
    "Skill",
    "check_required",
    "concurrency_hint",
    "find",
    "missing",
    "provide",
    "rendered",
    "section",
    "wanted",
]
