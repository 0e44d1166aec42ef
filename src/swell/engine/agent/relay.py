"""Running an agent with relay: watch its context while it works; past the threshold,
stop it, have the summarizer write a checkpoint, and start a fresh instance from it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from swell.adapters.base import AgentAdapter, AgentRequest, AgentResult, Usage
from swell.engine.agent import stall
from swell.engine.agent.agents import Drive, HelperCall, drive, run_helper, summarizer_timeout
from swell.engine.visit.context import VisitContext
from swell.events import models as ev
from swell.relay.checkpoint import (
    SUMMARIZER_SYSTEM,
    checkpoint,
    history_text,
    resume_prompt,
    summarizer_prompt,
)
from swell.relay.settings import CHARS_PER_TOKEN, RelaySettings
from swell.workspace.artifacts import write_run_file
from swell.workspace.safe import UnsafePath

READ_ONLY = ["Read", "Grep", "Glob"]
DENIED = ["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "WebFetch", "WebSearch"]


class RelayHalt(Exception):
    """The relay cannot go on (summarizer over its cap, unavailable, too many relays)."""


@dataclass
class Relayed:
    result: AgentResult | None
    relays: int = 0
    tokens_in: int = 0  # of instances that were stopped, and of the summarizer
    tokens_out: int = 0
    error: str | None = None


def context_tokens(usage: Usage) -> int:
    """The context of the latest turn: input plus cache reads and writes (not a sum of turns)."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


async def run(
    ctx: VisitContext, adapter: AgentAdapter, request: AgentRequest, settings: RelaySettings | None
) -> Relayed:
    """Drive the agent; with relay settings, hand over to fresh instances as needed."""
    out = Relayed(None)

    def emit(event: ev.BaseEvent) -> None:
        ctx.emit([ctx.event(event)])

    task = request.prompt
    stall_s = stall.seconds(ctx.plan.project.manifest.runtime.stall_timeout)
    while True:
        stop = (lambda u: context_tokens(u) >= settings.limit) if settings else None
        instance = await drive(adapter, request, emit, stop, stall_s)
        if not instance.stopped or settings is None:
            out.result = instance.result
            return out
        out.relays += 1
        used = instance.last_usage or Usage()
        out.tokens_in += used.input_tokens + used.cache_read_tokens
        out.tokens_out += used.output_tokens
        emit(
            ev.RelayTriggered(
                relay=out.relays,
                tokens=context_tokens(used),
                threshold=settings.limit,
                window=settings.window,
                session_id=instance.session_id,
            )
        )
        if out.relays > settings.max_relays:
            out.error = (
                f"relay: the context filled up again after {settings.max_relays} relays "
                "(max_relays); stopping"
            )
            return out
        try:
            text = await _checkpoint(ctx, settings, task, instance, out)
        except RelayHalt as exc:
            out.error = f"relay: {exc}"
            return out
        prompt = resume_prompt(task, text, out.relays)
        request = request.model_copy(update={"prompt": prompt, "resume_session": None})
        emit(ev.RelayResumed(relay=out.relays, prompt_chars=len(prompt)))


async def _checkpoint(
    ctx: VisitContext, settings: RelaySettings, task: str, instance: Drive, out: Relayed
) -> str:
    """Summarize the stopped instance's session into a checkpoint; record it."""
    history = history_text(task, instance.transcript)
    if len(history) // CHARS_PER_TOKEN > settings.summarizer_cap:
        raise RelayHalt(
            f"the session history (~{len(history) // CHARS_PER_TOKEN} tokens) is larger than "
            f"the summarizer's cap ({settings.summarizer_cap} tokens); not compacting"
        )
    summary = await _summarize(ctx, settings, history, out)
    modified = ctx.workspace.changed_files() if ctx.workspace.base else []
    text = checkpoint(summary, modified, out.relays)
    raw = text.encode()
    rel = f"{ctx.step.id}/{ctx.visit}/checkpoint-{out.relays}.md"
    try:
        path = write_run_file(ctx.plan.run_dir, rel, raw)
    except UnsafePath as exc:
        raise RelayHalt(f"cannot write the checkpoint: {exc}") from None
    state = ctx.state
    thread = ctx.step.thread
    ctx.emit(
        [
            ctx.event(
                ev.ArtifactWritten(
                    name=f"checkpoint-{out.relays}",
                    path=str(path),
                    sha256=hashlib.sha256(raw).hexdigest(),
                    size=len(raw),
                    artifact_type="markdown",
                )
            ),
            ctx.event(
                ev.RelayCheckpoint(
                    relay=out.relays,
                    path=str(path),
                    size=len(raw),
                    history_chars=len(history),
                    summarizer=settings.summarizer or "built-in",
                )
            ),
            ctx.event(
                ev.RoundRecorded(
                    round=state.rounds + 1,
                    thread=thread,
                    thread_round=state.thread_rounds[thread] + 1 if thread else None,
                    role=f"{ctx.step.id}:checkpoint",
                    persona=settings.summarizer,
                    content=text,
                    metadata={"relay": out.relays, "kind": "checkpoint"},
                )
            ),
        ]
    )
    return text


async def _summarize(ctx: VisitContext, settings: RelaySettings, history: str, out: Relayed) -> str:
    answer = await run_helper(
        ctx,
        HelperCall(
            role="checkpoint",
            persona=settings.summarizer,
            system=SUMMARIZER_SYSTEM,
            prompt=summarizer_prompt(history),
            visit=out.relays,
            timeout_s=summarizer_timeout(ctx),
            temperature=0.0,
            tools=(READ_ONLY, DENIED),  # minimal permissions: read only, no writes, no shell
        ),
    )
    out.tokens_in += answer.tokens_in
    out.tokens_out += answer.tokens_out
    if answer.error_kind == "agent":  # a configuration problem: no summarizer to ask
        raise RelayHalt(f"summarizer unavailable: {answer.error}")
    if not answer.success or not answer.text.strip():
        raise RelayHalt(f"the summarizer gave no checkpoint: {answer.error or 'no answer'}")
    return answer.text


__all__ = ["RelayHalt", "Relayed", "context_tokens", "run"]
