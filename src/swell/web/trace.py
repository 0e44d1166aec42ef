"""A visit's events as a reader follows them: an agent's streamed text joined into one
block per turn (a CLI streams one short answer as many `agent.text` pieces), tool
calls with what they were given and how long they took, usage per turn, and the
relay checkpoints and thread context where they happened."""

from __future__ import annotations

from typing import Any

from swell.web.timefmt import since_ms

TEXT = "agent.text"


def collapse_text(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` with each run of consecutive `agent.text` pieces made one event: the
    pieces' text joined, `pieces` how many there were, the first one's seq and time."""
    out: list[dict[str, Any]] = []
    for event in events:
        last = out[-1] if out else None
        if event.get("type") == TEXT and last is not None and last.get("type") == TEXT:
            last["text"] = f"{last.get('text') or ''}{event.get('text') or ''}"
            last["pieces"] = int(last.get("pieces", 1)) + 1
            last["last_seq"] = event.get("seq")
            continue
        out.append(dict(event, pieces=1) if event.get("type") == TEXT else event)
    return out


def tool_durations(events: list[dict[str, Any]]) -> dict[int, int | None]:
    """Each tool call's duration by its seq: until the agent's next event (the tool's
    result is what the agent did next; a CLI does not report the call's end)."""
    out: dict[int, int | None] = {}
    for i, event in enumerate(events):
        if event.get("type") != "agent.tool_call":
            continue
        after = next(
            (e for e in events[i + 1 :] if str(e.get("type", "")).startswith(("agent.", "step."))),
            None,
        )
        out[int(event.get("seq", 0))] = (
            since_ms(event.get("ts"), after.get("ts")) if after else None
        )
    return out
