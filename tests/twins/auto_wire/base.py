"""What the decision core and the wire modules share: a conversation read from a request
and the move the core makes, both free of any protocol's shapes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)  # CLIs' own notes

Kind = Literal["write", "read", "shell", "answer", "other"]


@dataclass
class Call:
    """A tool call the agent made earlier in this task, and what came of it."""

    kind: Kind
    name: str  # the CLI's own tool name
    target: str | None  # the file (write, read) or the command (shell)
    error: bool
    fresh: bool  # its result is in the request's last message (counted once)
    result: str = ""


@dataclass
class Conversation:
    """One agent turn's request, read: the task and what the agent did for it so far."""

    prompt: str  # the current task's text (a resumed session carries earlier tasks)
    turns: int  # assistant turns since that task was given
    calls: list[Call]
    workdir: str | None  # the agent's working directory, as the CLI tells the model
    system: str = ""  # the system (developer) instructions, where swell's answer schemas go
    # the schema of a structured answer the CLI asks for (Claude Code's StructuredOutput
    # tool, Codex's --output-schema), else None
    answer_schema: dict[str, Any] | None = None
    side_call: bool = False  # a CLI's own helper call (a title, a summary): no agent turn


@dataclass
class Write:
    path: str
    content: str


@dataclass
class Read:
    path: str


@dataclass
class Shell:
    command: str
    purpose: str


Action = Write | Read | Shell


@dataclass
class Move:
    """What the model does next: tool actions, a structured answer, or a closing text."""

    actions: list[Action] = field(default_factory=list)
    answer: dict[str, Any] | None = None
    text: str = ""


def last_task(texts: list[tuple[int, str]]) -> tuple[int, str]:
    """The (index, text) of the last message with text of its own, CLI notes removed."""
    for index, text in reversed(texts):
        text = REMINDER.sub("", text)
        if text.strip():
            return index, text
    return 0, ""
