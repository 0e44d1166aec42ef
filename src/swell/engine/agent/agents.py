"""Running an agent for the engine: which adapter and model, what it may do and see,
and turning its event stream into run events. Used by prompt steps and by the
helper personas that work for a visit (summarizers, reviewers)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
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
    AgentToolResult,
    AgentTurnEnded,
    AgentUsageUpdate,
    Usage,
)
from swell.contracts.base import AgentAnswer
from swell.engine.agent import stall, tiers
from swell.engine.loop import cost
from swell.engine.loop.retry import attempt_of
from swell.engine.visit import sandboxing
from swell.engine.visit.context import VisitContext
from swell.errors import SwellError
from swell.events import models as ev
from swell.manifest.models import AdapterConfig, Persona, Step
from swell.workspace import safe

DEFAULT_SUMMARIZER_ADAPTER = "local"  # the embedded model: runs anywhere, offline
SUMMARIZER_TIMEOUT = 300.0  # seconds; Wave's 15 minutes is `timeouts.relay_compaction_minutes`


def summarizer_timeout(ctx: VisitContext) -> float:
    """How long a summarizer (relay checkpoint, thread summary) may take: wave.yaml's
    `runtime.timeouts.relay_compaction_minutes`, else SUMMARIZER_TIMEOUT."""
    minutes = ctx.plan.project.manifest.runtime.timeouts.relay_compaction_minutes
    return minutes * 60 if minutes else SUMMARIZER_TIMEOUT


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


def helper_adapter(cli: str | None, persona: Persona | None, persona_name: str | None) -> str:
    """A helper persona's adapter: `--adapter` > the persona's, as in Wave, whose reviewer
    runs on the step's (overridden) adapter; the summariser without a persona runs on
    the embedded model."""
    if not persona_name:
        return DEFAULT_SUMMARIZER_ADAPTER
    return cli or (persona.adapter if persona else None) or ""


def choose_model(ctx: VisitContext, persona: Persona | None, adapter: str) -> str | None:
    """The model name the visit runs on (engine/agent/tiers.py: `--model` > step > persona >
    auto_route > adapter default, tiers resolved, raised one level per retry)."""
    return tiers.choose(
        ctx.plan.project.manifest,
        adapter,
        cli=ctx.plan.options.model,
        step=ctx.step,
        persona_name=ctx.step.persona,
        persona=persona,
        attempt=attempt(ctx),
    )


def attempt(ctx: VisitContext) -> int:
    """Which attempt of its step this visit is: a visit queued by a retry (or queued
    again after that visit was interrupted) is the attempt its RetryRequested announced;
    any other visit is a first attempt (a rework or a loop's next visit is new work)."""
    return attempt_of(ctx.state, ctx.step.id, ctx.activation)


def permissions(
    ctx: VisitContext, persona: Persona | None, adapter: str
) -> tuple[list[str], list[str]]:
    """Allowed and denied tools, merged (as Wave does) from the step's `permissions`,
    the persona's and the adapter's defaults: the union of each list; deny wins."""
    config = ctx.plan.project.manifest.adapters.get(adapter)
    return merged_permissions(ctx.step, persona, config)


def merged_permissions(
    step: Step, persona: Persona | None, config: AdapterConfig | None
) -> tuple[list[str], list[str]]:
    """The union of the step's, the persona's and the adapter's allow and deny lists,
    without the allowed entries a denial names."""
    allowed: list[str] = []
    denied: list[str] = []
    layers = [step.permissions, persona.permissions if persona else None]
    layers.append(config.default_permissions if config else None)
    for perms in (p for p in layers if p is not None):
        allowed += [t for t in perms.allowed_tools if t not in allowed]
        denied += [t for t in perms.deny if t not in denied]
    return [t for t in allowed if t not in denied], denied


def permission_warnings(
    ctx: VisitContext, adapter: str, allowed: list[str], denied: list[str]
) -> list[str]:
    """One message for each permission entry the adapter's CLI cannot enforce."""
    manifest = ctx.plan.project.manifest
    config = manifest.adapters.get(adapter)
    options = dict(config.options) if config else {}
    kind = manifest.adapter_type(adapter)
    return ctx.services.adapters.permission_warnings(kind, adapter, options, allowed, denied)


PERSONAS_DIR = ".agents/personas"
BASE_PROTOCOL = f"{PERSONAS_DIR}/base-protocol.md"


def system_prompt(root: Path, persona: Persona | None, name: str | None = None) -> str:
    """The persona's own system prompt: `system_prompt_file`, else `system_prompt`, else
    (as Wave) `.agents/personas/<name>.md` when the project has one."""
    if persona is None:
        return ""
    if persona.system_prompt_file:
        return safe.read_project_text(root / persona.system_prompt_file)
    if persona.system_prompt:
        return persona.system_prompt
    default = root / PERSONAS_DIR / f"{name}.md" if name else None
    return safe.read_project_text(default) if default and default.is_file() else ""


def base_protocol(root: Path) -> str:
    """`.agents/personas/base-protocol.md`, which Wave puts before the system prompt of
    every agent doing a step's work; "" when the project has none."""
    path = root / BASE_PROTOCOL
    return safe.read_project_text(path) if path.is_file() else ""


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
    """The agent's environment: curated, plus the adapter's passthrough, plus
    `runtime.sandbox.env_passthrough` of a sandboxed run (Wave passes those to sandboxed
    adapters too: a git identity, a forge token), plus `extra`."""
    names = tuple(getattr(adapter, "env_passthrough", ()))
    sandboxed = sandboxing.settings(ctx.plan)
    if sandboxed is not None:
        names += sandboxed.env_passthrough
    return {**agent_env(names), **extra}


@dataclass(frozen=True)
class HelperCall:
    """A persona working for the current visit (a reviewer, a summarizer)."""

    role: str  # the helper's step id is `STEP.role`
    persona: str | None  # None: the built-in summarizer, on the embedded model
    system: str  # swell's instructions, put before the persona's own system prompt
    prompt: str
    visit: int
    timeout_s: float
    model: str | None = None  # else the persona's, else `tier`, else the adapter's default
    tier: str | None = None  # e.g. "cheapest" for reviews
    json_schema: dict[str, Any] | None = None
    temperature: float | None = None  # None: the persona's
    # None: the persona's permissions; else (allowed, denied)
    tools: tuple[list[str], list[str]] | None = None


async def run_helper(ctx: VisitContext, call: HelperCall) -> AgentAnswer:
    """Run a helper persona once and return its answer. Configuration problems (an
    unknown persona, an adapter that cannot be made) are failed answers of kind
    `agent`, never exceptions."""
    manifest = ctx.plan.project.manifest
    persona = manifest.personas.get(call.persona) if call.persona else None
    if call.persona and persona is None:
        return AgentAnswer(False, error=f"unknown persona '{call.persona}'", error_kind="agent")
    adapter_name = helper_adapter(ctx.plan.options.adapter, persona, call.persona)
    config = manifest.adapters.get(adapter_name)
    wanted = tiers.requested(
        None,
        call.model,
        persona.model if persona else None,
        call.tier,
        config.default_model if config else None,
    )
    routing = manifest.runtime.routing
    model = tiers.resolve(wanted, manifest.adapter_type(adapter_name), config, routing)
    allowed, denied = call.tools or permissions(ctx, persona, adapter_name)
    if call.temperature is not None or persona is None:
        temperature = call.temperature
    else:
        temperature = persona.temperature
    try:
        adapter = make_adapter(ctx, adapter_name)
        request = _helper_request(
            ctx,
            adapter,
            persona,
            call,
            model=model,
            allowed_tools=allowed,
            denied_tools=denied,
            json_schema=call.json_schema,
            timeout_s=call.timeout_s,
            temperature=temperature,
        )
    except (SwellError, ValueError, OSError) as exc:  # not "unavailable": fail_open won't hide it
        return AgentAnswer(False, error=str(exc), error_kind="agent")
    result = (await drive(adapter, request, None)).result
    if result is None:
        return AgentAnswer(False, error="the agent ended without a result", error_kind="crash")
    return AgentAnswer(
        success=result.success,
        text=result.text,
        structured=result.structured,
        error=result.error,
        error_kind=result.error_kind,
        tokens_in=result.usage.input_tokens + result.usage.cache_read_tokens,
        tokens_out=result.usage.output_tokens,
        cost_usd=cost.visit_cost(
            model,
            result.usage.input_tokens + result.usage.cache_read_tokens,
            result.usage.output_tokens,
            result.usage.cost_usd,
        ),
        adapter=adapter_name,
        model=model,
    )


def _helper_request(
    ctx: VisitContext,
    adapter: AgentAdapter,
    persona: Persona | None,
    call: HelperCall,
    **fields: Any,
) -> AgentRequest:
    """The helper's request: swell's instructions before the persona's own system prompt,
    the visit's environment, and the step id `STEP.role`."""
    return AgentRequest(
        prompt=call.prompt,
        system_prompt="\n\n".join(
            filter(None, [call.system, system_prompt(ctx.plan.project.root, persona, call.persona)])
        ),
        workspace=ctx.workspace.path,
        env=visit_env(ctx, adapter, {**ctx.swell_env(), "SWELL_BIN": swell_bin()}),
        run_id=ctx.plan.run_id,
        step_id=f"{ctx.step.id}.{call.role}",
        visit=call.visit,
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
    stall_s: float | None = None,
) -> Drive:
    """Run the adapter, turning its stream into run events.

    `stop_when` sees each usage update. Once it says so, the agent is stopped (its
    process group ended) at the next turn boundary (`AgentTurnEnded`: every tool call
    the model asked for has returned), so the work in flight is done before a relay
    summarizes it. An agent that finishes first is not stopped; an adapter that never
    reports turn boundaries cannot be stopped mid-step. `stall_s`: the stall watchdog
    (engine/agent/stall.py); a stalled agent is stopped and its result is a timeout."""
    out = Drive(None)
    stream = adapter.run(request)
    loop = asyncio.get_running_loop()
    watchdog = stall.Watchdog(stall_s, loop.time) if stall_s else None
    full = False  # stop_when said so; waiting for the turn to end
    try:
        async with asyncio.timeout_at(watchdog.deadline() if watchdog else None) as limit:
            async for item in stream:
                if watchdog is not None:
                    watchdog.saw(item)
                    limit.reschedule(watchdog.deadline())
                if isinstance(item, AgentTurnEnded) and full:
                    out.stopped = True
                    break
                full = _take(item, out, emit, stop_when) or full
    except TimeoutError:
        if watchdog is None or not limit.expired():
            raise
        out.result = AgentResult(success=False, error=watchdog.error(), error_kind="timeout")
        if emit is not None:
            emit(ev.Warning(message=watchdog.error()))
    finally:
        close = getattr(stream, "aclose", None)  # ends the agent's process group if it still runs
        if close is not None:
            await close()
    return out


def _take(
    item: object,
    out: Drive,
    emit: Callable[[ev.BaseEvent], None] | None,
    stop_when: Callable[[Usage], bool] | None,
) -> bool:
    """Record one streamed item in `out` and as a run event; True when `stop_when`
    says the agent's context is full."""
    event: ev.BaseEvent | None = None
    full = False
    if isinstance(item, AgentFinished):
        out.result = item.result
    elif isinstance(item, AgentText):
        out.transcript.append(("said", item.text))
        event = ev.AgentText(text=item.text)
    elif isinstance(item, AgentToolCall):
        out.transcript.append(("tool", f"{item.name} {item.target or ''}".strip()))
        event = ev.AgentToolCall(name=item.name, target=item.target, call_id=item.call_id)
    elif isinstance(item, AgentToolResult):
        event = ev.AgentToolResult(**asdict(item))  # the same fields
    elif isinstance(item, AgentUsageUpdate):
        u = out.last_usage = item.usage
        event = ev.AgentUsage(**u.model_dump())  # the same fields
        full = stop_when is not None and stop_when(u)
    elif isinstance(item, AgentSessionStarted):
        out.session_id = item.session_id
        event = ev.AgentSession(session_id=item.session_id)
    if event is not None and emit is not None:
        emit(event)
    return full
