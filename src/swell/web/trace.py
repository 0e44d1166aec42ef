"""A visit's events as a reader follows them: an agent's streamed text joined into one
block per turn (a CLI streams one short answer as many `agent.text` pieces), tool
calls with what they were given, what they returned and how long they took, usage per
turn, and the relay checkpoints and thread context where they happened."""

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
    """Each tool call's duration by its seq, for calls without an `agent.tool_result`
    (events stored before adapters recorded results): until the agent's next event."""
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


AGENT_QUIET = ("agent.session", "step.queued", "step.started", "step.finished")
MARKERS = {
    "relay.triggered": "relay",
    "relay.checkpoint": "relay",
    "relay.resumed": "relay",
    "thread.context": "thread",
    "thread.summarized": "thread",
    "round.recorded": "thread",
}


def turns(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The visit as a trace: agent turns (its text joined, its tool calls with what
    they were given and how long they took, the turn's tokens and cost), and between
    them the relay checkpoints, thread context, contracts and other events where they
    happened. A turn ends with the usage the agent reported for it."""
    took = tool_durations(events)
    items: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}  # call id -> its tool part
    turn: dict[str, Any] | None = None
    count = 0
    for e in events:
        kind = str(e.get("type", ""))
        if kind in AGENT_QUIET or kind == "prompt.rendered":
            continue
        if kind == "agent.tool_result":
            # after the turn's usage, often: it belongs to its call, wherever that is
            _answer(calls.get(str(e.get("call_id"))), e)
            continue
        if kind.startswith("agent."):
            if turn is None:
                count += 1
                turn = {"kind": "turn", "n": count, "ts": e.get("ts"), "parts": [], "usage": None}
                items.append(turn)
            parts: list[dict[str, Any]] = turn["parts"]
            if kind == TEXT:
                if parts and parts[-1]["kind"] == "text":
                    parts[-1]["text"] += e.get("text") or ""
                else:
                    parts.append({"kind": "text", "text": e.get("text") or ""})
            elif kind == "agent.tool_call":
                seq = int(e.get("seq", 0))
                part = {
                    "kind": "tool",
                    "name": e.get("name"),
                    "input": e.get("target"),
                    "ms": took.get(seq),
                    "seq": seq,
                    "result": None,
                }
                parts.append(part)
                if e.get("call_id"):
                    calls[str(e["call_id"])] = part
            elif kind == "agent.usage":
                turn["usage"] = e
                turn = None
            continue
        turn = None  # what happens between turns shows where it happened
        items.append({"kind": MARKERS.get(kind, "event"), "event": e})
    return items


def _answer(part: dict[str, Any] | None, result: dict[str, Any]) -> None:
    """Put a tool call's result in its part: output, failed, and the measured duration
    in place of the until-the-next-event guess."""
    if part is None:
        return
    part["result"] = {
        "output": result.get("output") or "",
        "is_error": bool(result.get("is_error")),
        "truncated": int(result.get("truncated") or 0),
    }
    part["measured"] = result.get("duration_ms") is not None
    if part["measured"]:
        part["ms"] = result.get("duration_ms")
