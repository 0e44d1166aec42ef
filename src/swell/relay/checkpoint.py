"""The checkpoint a summarizer writes when a relay fires, and the prompt that resumes."""

from __future__ import annotations

import re
from collections.abc import Sequence

SECTIONS = (
    "Completed Work",
    "Current State",
    "Modified Files",
    "Remaining Work",
    "Resume Instructions",
)

SUMMARIZER_SYSTEM = (
    "You write handover checkpoints. An engineer's working context filled up; a fresh "
    "engineer will continue from your checkpoint alone. Be specific and complete: exact "
    "file names, commands, error messages, decisions. Do not invent anything that is not "
    "in the history. You cannot change files."
)


def history_text(task: str, events: Sequence[tuple[str, str]]) -> str:
    """The instance's session as the summarizer reads it: its task, then what it said and did."""
    lines = ["## Task", task.strip(), "", "## What the engineer did and said, in order"]
    for kind, text in events:
        lines.append(f"- [{kind}] {text.strip()}")
    return "\n".join(lines) + "\n"


def summarizer_prompt(history: str) -> str:
    wanted = ", ".join(s for s in SECTIONS if s != "Modified Files")
    return (
        f"{history}\nWrite the checkpoint now, as Markdown with exactly these sections "
        f"(each a `## ` heading): {wanted}. Modified files are filled in for you."
    )


def _sections(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    parts = re.split(r"^#{1,3}\s*(.+?)\s*$", text, flags=re.M)
    for title, body in zip(parts[1::2], parts[2::2], strict=False):
        for name in SECTIONS:
            if title.strip().lower().rstrip(":") == name.lower():
                found[name] = body.strip()
    return found


def checkpoint(summary: str, modified: Sequence[str], relay: int) -> str:
    """The structured checkpoint: the summarizer's sections, Modified Files from the
    workspace's own diff (never the model's memory)."""
    found = _sections(summary)
    if not found and summary.strip():
        found["Completed Work"] = summary.strip()
    files = "\n".join(f"- {path}" for path in modified) or "- (none)"
    body = {**found, "Modified Files": files}
    parts = [f"# Checkpoint (relay {relay})"]
    for name in SECTIONS:
        parts.append(f"## {name}\n{body.get(name) or '(not given)'}")
    return "\n\n".join(parts) + "\n"


def resume_prompt(task: str, checkpoint_text: str, relay: int) -> str:
    """What the fresh instance starts with: the original task and the latest checkpoint only."""
    return (
        "You are continuing a task that another instance of you started. Its context filled "
        f"up, so it handed over this checkpoint (relay {relay}). Read it, then finish the task.\n\n"
        f"{checkpoint_text}\n## The original task\n{task}"
    )
