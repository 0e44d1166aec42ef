"""Checks before a run starts: everything that would make it fail for want of
something this machine or the project can fix, found before a run record exists.

- an unknown adapter (`--adapter foo`, or one a persona names that no registry has);
- an agent CLI that is not installed, or an embedded model that is not;
- no credentials for an adapter the run uses (an API key, or the CLI's login);
- a persona without the tools a step needs (below);
- a required input that is missing (`input.type` other than `string`);
- a worktree workspace without git.

Each finding says what to do about it. A step *needs a write tool* when it declares
an output artifact with `source: file` (the agent must write that file): its persona
(or `adapters.NAME.default_permissions`) must allow `*` (every tool) or one of Write,
Edit, MultiEdit, NotebookEdit, Bash (or the adapter's own names: write_file, replace, run_shell_command,
write, edit, patch) when it lists `allowed_tools` at all, and must not deny them all. A
tool limited to some paths (`Write(docs/**)`) counts; a shell limited to some commands
(`Bash(git log *)`) does not.
Adapters that cannot enforce permissions are not held to this (nothing is blocked);
adapters without tools (local, openai) cannot write files at all, unless their answer
is what the files hold (`Capabilities.answer_fills_outputs`: the browser's results).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swell.adapters.permissions import Entry, allows_everything, entries
from swell.engine.agent import skills, tiers
from swell.engine.agent.persona_names import persona_variables, render_persona, templated
from swell.engine.visit import forge
from swell.errors import SwellError
from swell.manifest.loader import LoadedPipeline, Project, load_pipeline
from swell.manifest.models import Pipeline, Step
from swell.ops import toolchain

if TYPE_CHECKING:
    from swell.registries import Registries

SHELL_TOOLS = frozenset({"bash", "shell", "run_shell_command"})
DEFAULT_WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "notebookedit", "bash"})
WRITE_TOOLS = SHELL_TOOLS | frozenset(
    {"write", "edit", "multiedit", "notebookedit", "write_file", "replace", "edit_file",
     "patch", "apply_patch"}
)  # fmt: skip
MAX_DEPTH = 8  # sub-pipelines followed this deep


@dataclass(frozen=True)
class Finding:
    """One reason a run cannot start, and what to do about it."""

    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.message}\n    fix: {self.fix}"


class PreflightFailed(SwellError):
    """The run was not started: the findings say why."""

    def __init__(self, pipeline: str, findings: list[Finding]) -> None:
        self.findings = findings
        count = f"{len(findings)} problem{'s' if len(findings) != 1 else ''}"
        lines = "\n".join(f"  - {f}" for f in findings)
        super().__init__(f"run of pipeline '{pipeline}' not started, {count}:\n{lines}")


@dataclass(frozen=True)
class AgentUse:
    """An agent a run may start: a step's persona, or a contract's reviewer."""

    step: str
    role: str  # "step", or "review" (an agent_review contract's reviewer)
    persona: str | None
    adapter: str  # the name in wave.yaml (or a built-in's)
    adapter_type: str
    model: str | None
    pipeline: str  # the pipeline the step belongs to (a sub-pipeline's own name)


def resolve_model(project: Project, adapter: str, *choices: str | None) -> str | None:
    """The model a first attempt runs on, as engine/agent/tiers.py resolves it: `choices` are
    (`--model`, step model, persona model), any of them may be missing or None; else
    the adapter's default. A tier never shows: it is resolved to its model."""
    cli, step_model, persona_model = (*choices, None, None, None)[:3]
    manifest = project.manifest
    config = manifest.adapters.get(adapter)
    default = config.default_model if config else None
    model = tiers.requested(cli, step_model, persona_model, None, default)
    return tiers.resolve(model, manifest.adapter_type(adapter), config, manifest.runtime.routing)


def _reviewers(step: Step, registries: Registries) -> list[str]:
    found = []
    for contract in step.handover.all_contracts if step.handover else []:
        if contract.type not in registries.contract_types:
            continue
        kind = registries.contract_types.get(contract.type)
        try:
            settings = kind.Settings.model_validate(contract.settings)
        except ValueError:
            continue  # `swell validate` reports it
        name = kind.reviewer(settings)
        if name:
            found.append(name)
    return found


def agent_uses(
    project: Project,
    loaded: LoadedPipeline,
    registries: Registries,
    adapter: str | None = None,
    model: str | None = None,
) -> list[AgentUse]:
    """Every agent the pipeline (and the sub-pipelines it names) may start: each step
    naming a persona or an adapter (`--adapter` > step > persona), each reviewer."""
    uses: list[AgentUse] = []
    seen: set[str] = set()

    def walk(pipe: Pipeline, name: str, depth: int) -> None:
        seen.add(name)
        personas = project.manifest.personas
        for step in pipe.steps:
            persona_name = _persona_name(project, step, name)
            persona = personas.get(persona_name or "")
            if persona_name or step.adapter:
                chosen = adapter or step.adapter or (persona.adapter if persona else None)
                if chosen:
                    uses.append(_use(project, step, persona_name, chosen, name, model))
            for reviewer in _reviewers(step, registries):
                p = personas.get(reviewer)
                if p and (adapter or p.adapter):
                    chosen = adapter or p.adapter or ""
                    uses.append(_use(project, step, reviewer, chosen, name, None, "review"))
            child = step.pipeline
            if child and "{{" not in child and child not in seen and depth < MAX_DEPTH:
                try:
                    sub = load_pipeline(project.root, child)
                except SwellError:
                    continue  # validation reports it
                walk(sub.pipeline, sub.name, depth + 1)

    walk(loaded.pipeline, loaded.name, 0)
    return uses


def _persona_name(project: Project, step: Step, pipeline: str) -> str | None:
    """The persona a step runs as: a templated name rendered as the run renders it."""
    if not templated(step.persona):
        return step.persona
    return render_persona(step.persona, persona_variables(project, pipeline_name=pipeline))


def _use(
    project: Project,
    step: Step,
    persona_name: str | None,
    adapter: str,
    pipeline: str,
    model: str | None,
    role: str = "step",
) -> AgentUse:
    persona = project.manifest.personas.get(persona_name or "")
    if role == "step":  # as the visit chooses it, `routing.auto_route` included
        chosen = tiers.choose(
            project.manifest,
            adapter,
            cli=model,
            step=step,
            persona_name=persona_name,
            persona=persona,
        )
    else:
        chosen = resolve_model(project, adapter, model, None, persona.model if persona else None)
    type_name = project.manifest.adapter_type(adapter)
    return AgentUse(step.id, role, persona_name, adapter, type_name, chosen, pipeline)


# ---------------------------------------------------------------------------- checks


def check_run(
    project: Project,
    registries: Registries,
    loaded: LoadedPipeline,
    *,
    input_text: str,
    adapter: str | None = None,
    model: str | None = None,
) -> list[Finding]:
    """What would stop a run of `loaded` from working, before it is created."""
    found: list[Finding] = []
    # `in`, not a listing of the registry: listing it looks for plugins among every
    # installed package, which a built-in or configured name never needs
    if adapter is not None and not (
        adapter in project.manifest.adapters or adapter in registries.adapters
    ):
        known = set(project.manifest.adapters) | set(registries.adapters)
        found.append(
            Finding(
                f"unknown adapter '{adapter}' (--adapter; known: {', '.join(sorted(known))})",
                f"use one of those, or add adapters.{adapter} (with its `type`) to wave.yaml",
            )
        )
        return found + _input(loaded, input_text)
    uses = agent_uses(project, loaded, registries, adapter, model)
    found += _adapters(project, registries, uses)
    found += _tools(project, registries, loaded, uses)
    found += _input(loaded, input_text)
    found += _git(loaded)
    found += _skills(project, loaded)
    found += _forge(project, loaded, uses)
    return found


def _skills(project: Project, loaded: LoadedPipeline) -> list[Finding]:
    """Named skills that do not exist, `requires.skills` whose check fails."""
    found = [
        Finding(
            f"{where} names skill '{name}', which does not exist",
            f"add skills/{name}/SKILL.md (or .agents/skills/{name}/SKILL.md)",
        )
        for where, name in skills.missing(project, loaded)
    ]
    problems, _ = skills.check_required(project, loaded)
    return found + [
        Finding(p, "install it, or mark it `optional: true` in requires.skills") for p in problems
    ]


def _forge(project: Project, loaded: LoadedPipeline, uses: list[AgentUse]) -> list[Finding]:
    """Wave's guards: a pipeline that needs a forge does not run without one."""
    cli = ("forge.cli_tool", "forge.pr_command")
    steps = [
        s.id
        for s in loaded.pipeline.steps
        if any(c in t.replace(" ", "") for c in cli for t in _texts(s))
    ]
    tools = [
        t
        for use in uses
        for t in _allowed(project, use)
        if use.pipeline == loaded.name and forge.runs_forge_cli(t)
    ]
    reasons = forge.local_guard(loaded.name, steps, tools)
    # detection runs git: only asked when a guard would apply
    if not reasons or forge.detect(project.root, project.manifest.metadata.forge).type != "local":
        return []
    return [
        Finding(
            f"{reason}, but the project has no forge (no git remote)",
            "add a git remote (origin), or set metadata.forge in wave.yaml",
        )
        for reason in reasons
    ]


def _texts(step: Step) -> list[str]:
    return [t for t in (step.script, step.exec.source if step.exec else None) if t]


def _allowed(project: Project, use: AgentUse) -> list[str]:
    persona = project.manifest.personas.get(use.persona or "")
    return list(persona.permissions.allowed_tools) if persona else []


def run_warnings(project: Project, registries: Registries, loaded: LoadedPipeline) -> list[str]:
    """What a run may stumble on that does not stop it: forge tokens the personas in
    use declare (`token_scopes`), optional skills whose check fails."""
    uses = agent_uses(project, loaded, registries)
    personas = project.manifest.personas
    scopes = {u.persona: personas[u.persona].token_scopes for u in uses if u.persona in personas}
    declared = {k: v for k, v in scopes.items() if k and v}
    found = []
    if declared:  # detection runs git: only asked when a persona declares scopes
        detected = forge.detect(project.root, project.manifest.metadata.forge)
        found = forge.scope_warnings(detected, declared, dict(os.environ))
    return found + skills.check_required(project, loaded)[1]


def _where(use: AgentUse) -> str:
    who = f"persona '{use.persona}'" if use.persona else f"adapter '{use.adapter}'"
    what = "reviewer" if use.role == "review" else "step"
    return f"{what} '{use.step}' ({who})"


def _adapters(project: Project, registries: Registries, uses: list[AgentUse]) -> list[Finding]:
    """One finding per adapter (not per step): unknown, binary, model, credentials."""
    found: list[Finding] = []
    by_adapter: dict[str, list[AgentUse]] = {}
    for use in uses:
        by_adapter.setdefault(use.adapter, []).append(use)
    for name, its_uses in by_adapter.items():
        where = ", ".join(dict.fromkeys(_where(u) for u in its_uses))
        type_name = project.manifest.adapter_type(name)
        factory = toolchain.factory_of(registries.adapters, type_name)
        if factory is None:
            known = ", ".join(sorted(registries.adapters))
            found.append(
                Finding(
                    f"adapter '{name}' (type '{type_name}', used by {where}) is not available "
                    f"(known types: {known})",
                    f"fix adapters.{name}.type in wave.yaml, or install the plugin that provides it",
                )
            )
            continue
        config = project.manifest.adapters.get(name)
        options: dict[str, Any] = dict(config.options) if config else {}
        binary = toolchain.binary_for(project.root, project.manifest, name, registries.adapters)
        if binary is not None and binary.path is None:
            found.append(
                Finding(
                    f"adapter '{name}' needs the `{binary.wanted}` CLI, which is not installed "
                    f"(used by {where})",
                    f"{binary.install}, or set adapters.{name}.binary in wave.yaml to its path",
                )
            )
        if type_name == "local":
            local = toolchain.local_model(project.root, options)
            if local.problem:
                found.append(
                    Finding(f"adapter '{name}' cannot run (used by {where}): {local.problem}",
                            toolchain.LOCAL_INSTALL if "install" in local.problem
                            else f"fix adapters.{name}.options.model_path in wave.yaml")
                )  # fmt: skip
        creds = toolchain.credentials(type_name, options)
        if creds is not None and creds.ok is False:
            found.append(
                Finding(
                    f"adapter '{name}' has no credentials (used by {where}): none of "
                    f"{', '.join('$' + v for v in creds.wanted)} is set and no login was found",
                    creds.fix,
                )
            )
    return found


def _writes(entry: Entry) -> bool:
    """Whether an allowed-tools entry can write files: `*`, a file-writing tool, even
    limited to some paths (`Write(docs/**)`); a shell only when not limited to some
    commands (`Bash(git log *)` cannot be assumed to write)."""
    name = entry.tool.lower()
    if name in SHELL_TOOLS:
        return not entry.pattern
    return entry.everything or name in WRITE_TOOLS


def can_write(allowed: list[str], denied: list[str]) -> bool:
    """Whether a persona allowed `allowed` (empty: the adapter's defaults, everything;
    `*`: every tool) and denied `denied` has a tool that writes files. A denial with a
    pattern (`Bash(rm *)`) narrows a tool but does not take it away."""
    gone = {d.tool.lower() for d in entries(denied) if not d.pattern}
    if not allowed or allows_everything(allowed):  # Wave's (Claude Code's) tool names
        return bool(DEFAULT_WRITE_TOOLS - gone) and "*" not in gone
    return any(_writes(a) and a.tool.lower() not in gone for a in entries(allowed))


def _tools(
    project: Project, registries: Registries, loaded: LoadedPipeline, uses: list[AgentUse]
) -> list[Finding]:
    found: list[Finding] = []
    steps = {s.id: s for s in loaded.pipeline.steps}
    for use in uses:
        step = steps.get(use.step)
        if use.role != "step" or use.pipeline != loaded.name or step is None:
            continue
        files = [a for a in step.output_artifacts if a.source == "file"]
        if not files:
            continue
        factory = toolchain.factory_of(registries.adapters, use.adapter_type)
        caps = getattr(factory, "capabilities", None)
        names = ", ".join(a.path or a.name for a in files)
        if caps is not None and not caps.tools and not caps.answer_fills_outputs:
            found.append(
                Finding(
                    f"step '{step.id}' must write {names}, but adapter '{use.adapter}' has no "
                    "tools and cannot write files",
                    "declare the artifact with `source: stdout` (the answer becomes the file), "
                    "or give the step a persona whose adapter has tools",
                )
            )
            continue
        if not registries.adapters.enforces_permissions(use.adapter_type):
            continue
        persona = project.manifest.personas.get(use.persona or "")
        config = project.manifest.adapters.get(use.adapter)
        allowed = list(persona.permissions.allowed_tools if persona else [])
        denied = list(persona.permissions.deny if persona else [])
        if config:
            allowed += config.default_permissions.allowed_tools
            denied += config.default_permissions.deny
        if not can_write(allowed, denied):
            who = f"persona '{use.persona}'" if use.persona else f"adapter '{use.adapter}'"
            field = f"personas.{use.persona}" if use.persona else f"adapters.{use.adapter}"
            found.append(
                Finding(
                    f"step '{step.id}' must write {names}, but {who} may not write files "
                    f"(allowed_tools: {', '.join(allowed) or 'none'}; "
                    f"deny: {', '.join(denied) or 'none'})",
                    f"add Write (or Edit) to {field}.permissions.allowed_tools in wave.yaml",
                )
            )
    return found


def _input(loaded: LoadedPipeline, input_text: str) -> list[Finding]:
    config = loaded.pipeline.input
    if not config.required or input_text.strip():
        return []
    example = f" '{config.example}'" if config.example else " TEXT"
    return [
        Finding(
            f"pipeline '{loaded.name}' needs an input (input.type: {config.type})",
            f"swell run {loaded.name} --input{example}",
        )
    ]


def _git(loaded: LoadedPipeline) -> list[Finding]:
    worktrees = [
        s.id for s in loaded.pipeline.steps if s.workspace and s.workspace.type == "worktree"
    ]
    if not worktrees or toolchain.git_path() is not None:
        return []
    return [
        Finding(
            f"steps {', '.join(worktrees)} work in git worktrees, but git is not installed",
            "install git",
        )
    ]


def raise_findings(pipeline: str, findings: list[Finding]) -> None:
    if findings:
        raise PreflightFailed(pipeline, findings)


__all__ = [
    "AgentUse",
    "Finding",
    "PreflightFailed",
    "agent_uses",
    "can_write",
    "check_run",
    "raise_findings",
    "resolve_model",
    "run_warnings",
]
