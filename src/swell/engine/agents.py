"""Running an agent for the engine: which adapter and model, what it may do and see,
and turning its event stream into run events. Used by prompt steps and by the
helper personas that work for a visit (summarizers, reviewers)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swell.adapters.base import (
    AdapterSetup,
    AgentAdapter,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
    Usage,
)
from swell.engine.context import VisitContext
from swell.events import models as ev
from swell.manifest.models import Persona

TIERS = ("cheapest", "balanced", "strongest")
DEFAULT_SUMMARIZER_ADAPTER = "local"  # the embedded model: runs anywhere, offline
SUMMARIZER_TIMEOUT = 300.0

# what every agent process may see of swell's environment; adapters add their own
# names (API keys, base URLs) through `env_passthrough`
BASE_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_*", "TERM", "TMPDIR", "TZ", "XDG_*",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
)  # fmt: skip


def agent_env(passthrough: tuple[str, ...]) -> dict[str, str]:
    """The curated environment of an agent process: BASE_ENV plus the adapter's names."""
    names = BASE_ENV + passthrough
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
    return {k: v for k, v in os.environ.items() if k in exact or k.startswith(prefixes)}


def swell_bin() -> str:
    """The `swell` executable agents can call (`swell thread ...`)."""
    beside = Path(sys.executable).parent / "swell"
    return str(beside) if beside.exists() else (shutil.which("swell") or "swell")


def choose_adapter(ctx: VisitContext, persona: Persona | None) -> str:
    """`--adapter` > step `adapter` > persona `adapter`."""
    name = ctx.plan.options.adapter or ctx.step.adapter or (persona.adapter if persona else None)
    if not name:
        raise ValueError(f"step '{ctx.step.id}' has no adapter (set one on the persona or step)")
    return name


def choose_model(
    ctx: VisitContext, persona: Persona | None, adapter: str, step_level: bool = True
) -> str | None:
    """`--model` > step > persona > adapter default; tiers map through `tier_models`."""
    config = ctx.plan.project.manifest.adapters.get(adapter)
    model = (ctx.plan.options.model or ctx.step.model) if step_level else None
    model = (
        model or (persona.model if persona else None) or (config.default_model if config else None)
    )
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


def make_adapter(ctx: VisitContext, name: str) -> AgentAdapter:
    """The adapter called `name` in wave.yaml (or a built-in of that name)."""
    project = ctx.plan.project
    config = project.manifest.adapters.get(name)
    setup = AdapterSetup(
        name,
        config.binary if config else None,
        dict(config.options) if config else {},
        project.root,
    )
    return ctx.services.adapters.create(project.manifest.adapter_type(name), setup)


def visit_env(ctx: VisitContext, adapter: AgentAdapter, extra: dict[str, str]) -> dict[str, str]:
    """The agent's environment: curated, plus the adapter's passthrough, plus `extra`."""
    return {**agent_env(getattr(adapter, "env_passthrough", ())), **extra}


def summarizer(ctx: VisitContext, name: str | None) -> tuple[Persona | None, str]:
    """The summarizer persona called `name` (None: the built-in one) and its adapter."""
    persona = ctx.plan.project.manifest.personas.get(name) if name else None
    if name and persona is None:
        raise ValueError(f"summarizer persona '{name}' is not defined")
    return persona, (persona.adapter if persona else None) or DEFAULT_SUMMARIZER_ADAPTER


def helper_request(
    ctx: VisitContext,
    adapter: AgentAdapter,
    persona: Persona | None,
    *,
    role: str,
    system: str,
    prompt: str,
    visit: int,
    **fields: Any,
) -> AgentRequest:
    """A request for a persona working for the current visit (a summarizer, a reviewer):
    its `system` text before the persona's own prompt, the visit's environment, and a
    step id `STEP.role`."""
    return AgentRequest(
        prompt=prompt,
        system_prompt="\n\n".join(
            filter(None, [system, system_prompt(ctx.plan.project.root, persona)])
        ),
        workspace=ctx.workspace.path,
        env=visit_env(ctx, adapter, {**ctx.swell_env(), "SWELL_BIN": swell_bin()}),
        run_id=ctx.plan.run_id,
        step_id=f"{ctx.step.id}.{role}",
        visit=visit,
        **fields,
    )


@dataclass
class Drive:
    """How one agent instance ended: its result, or stopped by the watcher."""

    result: AgentResult | None
    stopped: bool = False
    transcript: list[tuple[str, str]] = field(default_factory=list)  # (kind, text) in order
    last_usage: Usage | None = None
    session_id: str | None = None


async def drive(
    adapter: AgentAdapter,
    request: AgentRequest,
    emit: Callable[[ev.BaseEvent], None] | None,
    stop_when: Callable[[Usage], bool] | None = None,
) -> Drive:
    """Run the adapter, turning its stream into run events. `stop_when` sees each usage
    update; when it says so the agent is stopped (its process group ended) mid-step."""
    out = Drive(None)
    stream = adapter.run(request)
    try:
        async for item in stream:
            event: ev.BaseEvent | None = None
            if isinstance(item, AgentFinished):
                out.result = item.result
            elif isinstance(item, AgentText):
                out.transcript.append(("said", item.text))
                event = ev.AgentText(text=item.text)
            elif isinstance(item, AgentToolCall):
                out.transcript.append(("tool", f"{item.name} {item.target or ''}".strip()))
                event = ev.AgentToolCall(name=item.name, target=item.target)
            elif isinstance(item, AgentUsageUpdate):
                u = out.last_usage = item.usage
                event = ev.AgentUsage(
                    input_tokens=u.input_tokens,
                    output_tokens=u.output_tokens,
                    cache_read_tokens=u.cache_read_tokens,
                    cache_write_tokens=u.cache_write_tokens,
                    cost_usd=u.cost_usd,
                )
            elif isinstance(item, AgentSessionStarted):
                out.session_id = item.session_id
                event = ev.AgentSession(session_id=item.session_id)
            if event is not None and emit is not None:
                emit(event)
            if (
                stop_when is not None
                and isinstance(item, AgentUsageUpdate)
                and stop_when(item.usage)
            ):
                out.stopped = True
                break
    finally:
        close = getattr(stream, "aclose", None)  # ends the agent's process group if it still runs
        if close is not None:
            await close()
    return out
