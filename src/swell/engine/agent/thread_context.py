"""What a threaded prompt visit is given of its thread (docs/threads.md).

`full`: resume the agent's own session when the thread's last agent round ran on the
same adapter (sending only what happened since), else the whole transcript; `compact`:
a template, no model call; `summary`: a summarizer persona's summary, cached per thread
position, falling back to compact; `fresh`: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swell.adapters.base import AgentAdapter
from swell.engine.agent.agents import HelperCall, run_helper, summarizer_timeout, swell_bin
from swell.engine.visit.context import VisitContext
from swell.events import models as ev
from swell.threads.fidelity import (
    SUMMARIZER_SYSTEM,
    Entry,
    compact,
    fetch_hint,
    summary_prompt,
    transcript,
)


@dataclass
class ThreadContext:
    preamble: str = ""
    resume_session: str | None = None
    fidelity: str = "fresh"
    native_resume: bool = False
    events: list[ev.BaseEvent] = field(default_factory=list)


async def prepare(ctx: VisitContext, adapter_name: str, adapter: AgentAdapter) -> ThreadContext:
    step, thread = ctx.step, ctx.step.thread
    requested = step.fidelity or ("full" if thread else "fresh")
    if not thread:
        return ThreadContext()
    entries = ctx.state.threads.get(thread, [])
    out = ThreadContext(fidelity=requested if entries else "fresh")
    if entries and requested == "full":
        _full(out, thread, entries, adapter_name, adapter, ctx.services.session_host)
    elif entries and requested == "compact":
        hint = fetch_hint(swell_bin(), ctx.plan.run_id, thread)
        out.preamble = compact(thread, ctx.plan.input, entries, ctx.state.context, hint)
    elif entries and requested == "summary":
        await _summary(ctx, out, thread, entries)
    out.events.append(
        ev.ThreadContext(
            thread=thread,
            fidelity=out.fidelity,
            requested=requested,
            native_resume=out.native_resume,
            session_id=out.resume_session,
            rounds=len(entries),
            chars=len(out.preamble),
        )
    )
    return out


def _full(
    out: ThreadContext,
    thread: str,
    entries: list[Entry],
    adapter_name: str,
    adapter: AgentAdapter,
    session_host: str | None,
) -> None:
    """Resume the agent's own session if it can, sending what happened since; else replay."""
    last = next((e for e in reversed(entries) if e.metadata.get("adapter")), None)
    session = last.metadata.get("session_id") if last else None
    if not (
        last
        and session
        and last.metadata.get("adapter") == adapter_name
        and adapter.capabilities.resume
        # a session kept on another host (an engine run's visit moved) cannot resume
        and last.metadata.get("session_host") == session_host
    ):
        out.preamble = transcript(thread, entries)
        return
    later = [e for e in entries if e.round > last.round]
    out.resume_session, out.native_resume = str(session), True
    out.preamble = transcript(thread, later, "Since your last turn in this thread") if later else ""


async def _summary(
    ctx: VisitContext, out: ThreadContext, thread: str, entries: list[Entry]
) -> None:
    """The cached or a new summary; compact (with a warning) when none can be had."""
    upto = entries[-1].round
    text = ctx.state.summaries.get((thread, upto))
    if text is None:
        text, problem = await _summarize(ctx, thread, entries)
        if text is not None:
            out.events.append(
                ev.ThreadSummarized(
                    thread=thread, upto_round=upto, text=text, persona=_summarizer_persona(ctx)
                )
            )
        else:
            out.events.append(
                ev.Warning(
                    message=f"thread '{thread}': summarizer unavailable "
                    f"({problem}); using compact fidelity"
                )
            )
    hint = fetch_hint(swell_bin(), ctx.plan.run_id, thread)
    if text is None:
        out.fidelity = "compact"
        out.preamble = compact(thread, ctx.plan.input, entries, ctx.state.context, hint)
    else:
        out.preamble = f"## Summary of this thread so far ({thread})\n{text.strip()}\n\n{hint}\n"


def _summarizer_persona(ctx: VisitContext) -> str | None:
    return ctx.plan.project.manifest.runtime.relay.summarizer_persona


async def _summarize(
    ctx: VisitContext, thread: str, entries: list[Entry]
) -> tuple[str | None, str]:
    """A summary from the summarizer persona (or the built-in local model); None and why
    when it cannot be had."""
    answer = await run_helper(
        ctx,
        HelperCall(
            role="summary",
            persona=_summarizer_persona(ctx),
            system=SUMMARIZER_SYSTEM,
            prompt=summary_prompt(thread, ctx.plan.input, entries),
            visit=1 + sum(1 for key in ctx.state.summaries if key[0] == thread),  # n-th summary
            timeout_s=summarizer_timeout(ctx),
            temperature=0.0,
            tools=([], []),
        ),
    )
    if not answer.success or not answer.text.strip():
        return None, answer.error or "no summary returned"
    return answer.text, ""
