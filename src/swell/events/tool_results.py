"""What a tool call an agent made returned: its output, whether it failed and how long
it took, as the agent's CLI reported it (adapters/tool_results.py). Part of the
`Event` union in events/models.py."""

from __future__ import annotations

from typing import Literal

from swell.events.envelope import BaseEvent, FreeText


class AgentToolResult(BaseEvent):
    """The result of the `agent.tool_call` with the same `call_id`. `output` is cut to
    its first and last characters when long (`truncated` says how many were left out);
    `duration_ms` is the CLI's own figure where it gives one, else the time between the
    call and its result in the CLI's stream."""

    type: Literal["agent.tool_result"] = "agent.tool_result"
    call_id: str
    name: str
    output: FreeText = ""
    is_error: bool = False
    duration_ms: int | None = None
    truncated: int = 0  # characters of the output left out
