"""The stall watchdog (`runtime.stall_timeout`), as Wave's: two timers of that length
run while an agent step's agent works. The activity timer restarts on anything the
agent streams (text, tool calls, usage, turn ends); the progress timer only on a call
of a tool that changes something (any tool but the read-only ones below). When either
runs out, the agent is stopped (its process group ended) and the attempt fails as an
agent timeout, which the step's `retry` policy retries like any other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from swell.adapters.base import AgentEvent, AgentText, AgentToolCall

# tools that show the agent is alive but not that it gets anywhere (Wave's list)
READ_ONLY_TOOLS = frozenset(
    {"Read", "Glob", "Grep", "WebSearch", "WebFetch", "ToolSearch", "TaskList", "TaskGet"}
)

_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(value: str | None) -> float | None:
    """A Go duration ("10m", "1h30m", "90s") in seconds; None when the watchdog is off
    (unset, "0" or "0s"; the loader already refused a malformed value)."""
    if not value:
        return None
    text = value.strip()
    total, pos = 0.0, 0
    for match in _GO_PART.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _GO_UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        return None
    return total or None


def describe(value: float) -> str:
    """Seconds as the message shows them: 500ms, 90s, 10m, 1h30m."""
    if value < 1:
        return f"{value * 1000:g}ms"
    if value != int(value) or value < 60:
        return f"{value:g}s"
    hours, rest = divmod(int(value), 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)


@dataclass
class Watchdog:
    """Both timers of one agent instance; `now` is the event loop's clock."""

    timeout: float
    now: Callable[[], float]
    activity: float = field(init=False)
    progress: float = field(init=False)
    busy: bool = False  # said or did something since the progress timer restarted

    def __post_init__(self) -> None:
        self.activity = self.progress = self.now()

    def saw(self, item: AgentEvent) -> None:
        """The agent streamed `item`: restart the timers it counts for."""
        self.activity = self.now()
        if isinstance(item, AgentToolCall) and item.name not in READ_ONLY_TOOLS:
            self.progress = self.activity
            self.busy = False
        elif isinstance(item, AgentText | AgentToolCall):
            self.busy = True

    def deadline(self) -> float:
        """When the first timer runs out (on the `now` clock)."""
        return min(self.activity, self.progress) + self.timeout

    def error(self) -> str:
        """Why the agent was stopped, naming the setting."""
        limit = describe(self.timeout)
        if self.activity <= self.progress or not self.busy:
            what = f"no output or events from the agent for {limit}"
        else:
            what = f"no progress for {limit} (no tool call other than reading or searching)"
        return f"stalled: {what} (runtime.stall_timeout: {limit}); the agent was stopped"


__all__ = ["READ_ONLY_TOOLS", "Watchdog", "describe", "seconds"]
