"""Prompt steps: a persona does the work through an agent adapter."""

from __future__ import annotations

import os
from pathlib import Path

from swell.adapters.base import (
    AdapterSetup,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
)
from swell.engine.context import StepResult, VisitContext
from swell.engine.outputs import output_namespace
from swell.engine.steps.command import swell_env, timeout_seconds
from swell.events import models as ev
from swell.manifest.lint import adapter_type
from swell.manifest.models import Persona
from swell.manifest.templates import render_text

TIERS = ("cheapest", "balanced", "strongest")

# what every agent process may see of swell's environment; adapters add their own
# names (API keys, base URLs) through `env_passthrough`
BASE_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_*",
    "TERM",
    "TMPDIR",
    "TZ",
    "XDG_*",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def agent_env(passthrough: tuple[str, ...]) -> dict[str, str]:
    """The curated environment of an agent process: BASE_ENV plus the adapter's names."""
    names = BASE_ENV + passthrough
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
    return {k: v for k, v in os.environ.items() if k in exact or k.startswith(prefixes)}


def choose_adapter(ctx: VisitContext, persona: Persona | None) -> str:
    """`--adapter` > step `adapter` > persona `adapter`."""
    name = ctx.plan.options.adapter or ctx.step.adapter or (persona.adapter if persona else None)
    if not name:
        raise ValueError(f"step '{ctx.step.id}' has no adapter (set one on the persona or step)")
    return name


def choose_model(ctx: VisitContext, persona: Persona | None, adapter: str) -> str | None:
    """`--model` > step > persona > adapter default; tiers map through `tier_models`."""
    config = ctx.plan.project.manifest.adapters.get(adapter)
    model = ctx.plan.options.model or ctx.step.model or (persona.model if persona else None)
    model = model or (config.default_model if config else None)
    if model in TIERS and config and model in config.tier_models:
        return config.tier_models[model]
    return model


def permissions(
    ctx: VisitContext, persona: Persona | None, adapter: str
) -> tuple[list[str], list[str]]:
    """Allowed and denied tools, merged from persona and adapter defaults; deny wins."""
    config = ctx.plan.project.manifest.adapters.get(adapter)
    allowed: list[str] = []
    denied: list[str] = []
    for perms in ([persona.permissions] if persona else []) + (
        [config.default_permissions] if config else []
    ):
        allowed += [t for t in perms.allowed_tools if t not in allowed]
        denied += [t for t in perms.deny if t not in denied]
    return [t for t in allowed if t not in denied], denied


def system_prompt(root: Path, persona: Persona | None) -> str:
    if persona is None:
        return ""
    if persona.system_prompt_file:
        return (root / persona.system_prompt_file).read_text(encoding="utf-8")
    return persona.system_prompt or ""


def task_prompt(ctx: VisitContext, has_tools: bool = True) -> tuple[str, list[str]]:
    exec_ = ctx.step.exec
    if exec_ is None:
        return "", []
    source = exec_.source
    if exec_.source_path:
        source = (ctx.plan.project.root / exec_.source_path).read_text(encoding="utf-8")
    rendered = render_text(source or "", ctx.namespace)
    return rendered.text + artifact_sections(ctx, has_tools), rendered.missing


INLINE_LIMIT = 20_000  # characters of an input artifact put into a tool-less agent's prompt


def artifact_sections(ctx: VisitContext, has_tools: bool = True) -> str:
    """Tell the agent which files it was given and which it must write. An agent
    without tools cannot open or write files: it gets the inputs' contents instead,
    and its answer becomes its `source: stdout` artifacts."""
    step, root = ctx.step, ctx.workspace.path
    lines: list[str] = []
    injected = ctx.namespace.get("artifacts", {})
    inputs = [(ref, injected.get(ref.as_ or ref.artifact)) for ref in step.memory.inject_artifacts]
    if any(path for _, path in inputs):
        lines += ["", "## Input artifacts"]
        for ref, path in inputs:
            if path:
                rel = os.path.relpath(path, root)
                lines.append(
                    f"- {ref.as_ or ref.artifact}: `{rel}` (artifact '{ref.artifact}' of step '{ref.step}')"
                )
                if not has_tools:
                    text = Path(path).read_text(encoding="utf-8", errors="replace")
                    cut = "\n[… truncated]" if len(text) > INLINE_LIMIT else ""
                    lines += ["```", text[:INLINE_LIMIT] + cut, "```"]
    files = [a for a in step.output_artifacts if a.source == "file" and a.path]
    if files and has_tools:
        lines += [
            "",
            "## Output artifacts",
            "Write these files (paths relative to your working directory):",
        ]
        for art in files:
            need = "required" if art.required else "optional"
            kind = f", {art.type}" if art.type else ""
            lines.append(f"- `{art.path}` ({art.name}; {need}{kind})")
    return "\n".join(lines) + ("\n" if lines else "")


async def run(ctx: VisitContext) -> StepResult:
    project = ctx.plan.project
    persona = project.manifest.personas.get(ctx.step.persona or "")
    try:
        adapter_name = choose_adapter(ctx, persona)
        config = project.manifest.adapters.get(adapter_name)
        setup = AdapterSetup(
            adapter_name,
            config.binary if config else None,
            dict(config.options) if config else {},
            project.root,
        )
        adapter = ctx.services.adapters.create(adapter_type(project, adapter_name), setup)
        prompt, missing = task_prompt(ctx, has_tools=adapter.capabilities.tools)
        allowed, denied = permissions(ctx, persona, adapter_name)
        request = AgentRequest(
            prompt=prompt,
            system_prompt=system_prompt(project.root, persona),
            workspace=ctx.workspace.path,
            model=choose_model(ctx, persona, adapter_name),
            allowed_tools=allowed,
            denied_tools=denied,
            timeout_s=timeout_seconds(ctx),
            temperature=persona.temperature if persona else None,
            env={**agent_env(getattr(adapter, "env_passthrough", ())), **swell_env(ctx)},
            run_id=ctx.plan.run_id,
            step_id=ctx.step.id,
            visit=ctx.visit,
        )
    except (OSError, ValueError) as exc:
        return StepResult(outcome="failure", error=str(exc))

    notes: list[ev.BaseEvent] = [
        ctx.event(ev.Warning(message=f"template variable '{m}' is not set; rendered empty"))
        for m in missing
    ]
    if denied and not adapter.capabilities.enforces_permissions:
        ctx.emit(
            [
                ctx.event(
                    ev.Warning(
                        message=f"adapter '{adapter_name}' cannot enforce denied tools: {', '.join(denied)}"
                    )
                )
            ]
        )
    result: AgentResult | None = None
    async for item in adapter.run(request):
        if isinstance(item, AgentFinished):
            result = item.result
        elif isinstance(item, AgentText):
            ctx.emit([ctx.event(ev.AgentText(text=item.text))])
        elif isinstance(item, AgentToolCall):
            ctx.emit([ctx.event(ev.AgentToolCall(name=item.name, target=item.target))])
        elif isinstance(item, AgentUsageUpdate):
            u = item.usage
            ctx.emit(
                [
                    ctx.event(
                        ev.AgentUsage(
                            input_tokens=u.input_tokens,
                            output_tokens=u.output_tokens,
                            cache_read_tokens=u.cache_read_tokens,
                            cache_write_tokens=u.cache_write_tokens,
                            cost_usd=u.cost_usd,
                        )
                    )
                ]
            )
        elif isinstance(item, AgentSessionStarted):
            ctx.emit([ctx.event(ev.AgentSession(session_id=item.session_id))])
    if result is None:
        return StepResult(
            outcome="failure",
            error=f"adapter '{adapter_name}' ended without a result",
            events=notes,
        )
    outcome = "success" if result.success else "failure"
    error = (
        None if result.success else f"{result.error_kind or 'agent'}: {result.error or 'failed'}"
    )
    return StepResult(
        outcome=outcome,
        error=error,
        exit_code=0 if result.success else 1,
        output_tail=result.text[-4000:] if result.text else None,
        outputs=output_namespace(result.text, "", 0 if result.success else 1, outcome),
        stdout=result.text,
        events=notes,
        tokens_in=result.usage.input_tokens + result.usage.cache_read_tokens,
        tokens_out=result.usage.output_tokens,
        cost_usd=result.usage.cost_usd or 0.0,
    )
