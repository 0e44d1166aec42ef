"""How much of a thread an agent's prompt carries: full, compact, summary or fresh.

Pure rendering over the thread's rounds; the engine decides which fidelity a visit
gets (and whether the agent's own session can be resumed instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

OUTPUT_LINES = 8  # of a command's output kept in a compact view


@dataclass(frozen=True)
class Entry:
    """One round of a thread, as the engine remembers it."""

    round: int  # within the thread
    role: str
    persona: str | None
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        return str(self.metadata.get("outcome", "unknown"))


def fetch_hint(swell: str, run_id: str, thread: str) -> str:
    return (
        f"For more of this thread's history, run: {swell} thread {run_id} --thread {thread}"
        " (add --before N to page back; $SWELL_RUN_ID and $SWELL_THREAD are set)"
    )


def transcript(
    thread: str, entries: Sequence[Entry], heading: str = "Earlier in this thread"
) -> str:
    """Every round in full: what each step said or printed, in order."""
    parts = [f"## {heading} ({thread})"]
    for e in entries:
        who = f"{e.role} ({e.persona})" if e.persona else e.role
        status = e.outcome
        if e.metadata.get("exit_code") not in (None, 0):
            status += f", exit {e.metadata['exit_code']}"
        parts.append(f"### [#{e.round}] {who}: {status}\n{e.content.rstrip() or '(no output)'}")
    return "\n\n".join(parts) + "\n"


def compact(
    thread: str, goal: str, entries: Sequence[Entry], context: Mapping[str, str], hint: str
) -> str:
    """Goal, one line per completed step (with the end of command output), context values."""
    lines = [
        f"## Where this thread stands ({thread})",
        f"Goal: {goal}" if goal else "Goal: (no input)",
        "",
        "Completed steps:",
    ]
    for e in entries:
        meta = e.metadata
        bits = [e.outcome]
        if meta.get("exit_code") not in (None, 0):
            bits.append(f"exit {meta['exit_code']}")
        if meta.get("tokens_in") or meta.get("tokens_out"):
            bits.append(f"{meta.get('tokens_in', 0)}→{meta.get('tokens_out', 0)} tokens")
        if meta.get("files_changed"):
            bits.append("files: " + ", ".join(map(str, meta["files_changed"][:10])))
        lines.append(f"- #{e.round} {e.role}: " + "; ".join(bits))
        if "adapter" not in meta and e.content.strip():  # a command: its last lines matter
            tail = [ln for ln in e.content.rstrip().splitlines() if ln.strip()][-OUTPUT_LINES:]
            lines += [f"    | {ln}" for ln in tail]
    if context:
        lines += ["", "Context:"] + [f"- {k} = {v}" for k, v in sorted(context.items())]
    lines += ["", hint]
    return "\n".join(lines) + "\n"


SUMMARIZER_SYSTEM = (
    "You summarize the history of a software task for the engineer who continues it. "
    "Keep: the goal, what was done, what failed and why (exact error lines), files touched, "
    "and what remains. Be brief and factual; never invent."
)


def summary_prompt(thread: str, goal: str, entries: Sequence[Entry]) -> str:
    return (
        f"Goal: {goal}\n\n"
        + transcript(thread, entries, "History")
        + "\nWrite the summary now, in at most 15 lines."
    )


def with_context(preamble: str, task: str) -> str:
    """The prompt an agent gets: what came before, then its own task."""
    if not preamble:
        return task
    return f"{preamble}\n## Your task\n{task}"
