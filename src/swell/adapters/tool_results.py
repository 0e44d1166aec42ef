"""What every CLI adapter does with its agent's tool calls and their results: a call is
remembered by its id, and its result becomes one AgentToolResult with the call's name,
its output masked of secrets and cut to a readable size, and its duration (the CLI's
own figure, else the time between the call and its result in the stream)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from swell.adapters.base import AgentToolCall, AgentToolResult
from swell.events.redact import Redactor

HEAD, TAIL = 3000, 1000  # characters of a long output kept from its start and its end


class ToolResults:
    """The tool calls of one visit that have no result yet, by call id."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.open: dict[str, tuple[str, float]] = {}  # call id -> (name, when it was seen)
        self.redactor = Redactor.from_environ(os.environ)

    def call(self, call_id: Any, name: str, target: str | None = None) -> AgentToolCall:
        """The AgentToolCall for a call the CLI reported, remembered until its result."""
        key = str(call_id) if call_id is not None else None
        if key is not None:
            self.open[key] = (name, self.clock())
        return AgentToolCall(name, target, key)

    def result(
        self,
        call_id: Any,
        output: Any,
        *,
        is_error: bool = False,
        duration_ms: int | None = None,
        name: str | None = None,
    ) -> AgentToolResult:
        """The result of call `call_id` (its name from the call, or `name` for a call
        never seen); `duration_ms` when the CLI reports it, else timed here."""
        key = str(call_id)
        called, started = self.open.pop(key, (name or "", None))
        if duration_ms is None and started is not None:
            duration_ms = round((self.clock() - started) * 1000)
        text, cut = clip(self.redactor.text(as_text(output)))
        return AgentToolResult(key, name or called, text, is_error, duration_ms, cut)


def as_text(output: Any) -> str:
    """A result's content as text: a string, or the text parts of a list of content
    blocks (`{"type": "text", "text": ...}`, as Anthropic's and MCP's results are)."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = [
            as_text(item.get("text")) if isinstance(item, dict) else as_text(item)
            for item in output
        ]
        return "\n".join(part for part in parts if part)
    if isinstance(output, dict) and "content" in output:
        return as_text(output["content"])
    return str(output)


def clip(text: str) -> tuple[str, int]:
    """`text` cut to its first HEAD and last TAIL characters, and how many were left out.
    Masking comes first, so no secret is split by the cut."""
    if len(text) <= HEAD + TAIL:
        return text, 0
    left_out = len(text) - HEAD - TAIL
    return f"{text[:HEAD]}\n… {left_out} characters left out …\n{text[-TAIL:]}", left_out


__all__ = ["ToolResults", "as_text", "clip"]
