"""Anthropic Messages, as Claude Code sends them: Write/Read/Bash, StructuredOutput."""

from __future__ import annotations

import re
from typing import Any

from twins.auto_wire.base import Call, Conversation, Kind, Move, Read, Shell, Write, last_task
from twins.server import Reply, ToolCall

WORKDIR = re.compile(r"Primary working directory: (\S+)")
KINDS: dict[str, Kind] = {"Write": "write", "Read": "read", "Bash": "shell"}
ANSWER = "StructuredOutput"  # the tool `--json-schema` turns on


def read(body: dict[str, Any]) -> Conversation:
    messages = body.get("messages") or []
    start, prompt = last_task(
        [(i, _text(m)) for i, m in enumerate(messages) if m.get("role") == "user"]
    )
    mine = messages[start:]
    tools = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
    answer = tools.get(ANSWER)
    return Conversation(
        prompt=prompt,
        turns=sum(1 for m in mine if m.get("role") == "assistant"),
        calls=_calls(mine),
        workdir=next((m.group(1) for t in _all_texts(body) if (m := WORKDIR.search(t))), None),
        answer_schema=(answer.get("input_schema") or {}) if answer else None,
        system=_system(body),
        side_call=not body.get("tools"),
    )


def reply(move: Move) -> Reply:
    if move.answer is not None:
        return Reply(tool_calls=[ToolCall(ANSWER, move.answer)])
    calls = []
    for action in move.actions:
        if isinstance(action, Write):
            calls.append(ToolCall("Write", {"file_path": action.path, "content": action.content}))
        elif isinstance(action, Read):
            calls.append(ToolCall("Read", {"file_path": action.path}))
        elif isinstance(action, Shell):
            calls.append(
                ToolCall("Bash", {"command": action.command, "description": action.purpose})
            )
    return Reply(tool_calls=calls, text="" if calls else move.text)


def _text(message: dict[str, Any]) -> str:
    """A user message's own text (not its tool results)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
    )


def _calls(messages: list[dict[str, Any]]) -> list[Call]:
    results: dict[str, tuple[bool, int, str]] = {}
    for index, message in enumerate(messages):
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = block.get("content")
                if isinstance(text, list):
                    text = " ".join(str(t.get("text", "")) for t in text if isinstance(t, dict))
                results[str(block.get("tool_use_id"))] = (
                    bool(block.get("is_error")),
                    index,
                    str(text or ""),
                )
    calls = []
    last = len(messages) - 1
    for message in messages:
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if not (isinstance(block, dict) and block.get("type") == "tool_use"):
                continue
            error, where, text = results.get(str(block.get("id")), (True, -1, ""))
            data = block.get("input") if isinstance(block.get("input"), dict) else {}
            name = str(block.get("name"))
            kind: Kind = "answer" if name == ANSWER else KINDS.get(name, "other")
            target = data.get("command") if kind == "shell" else data.get("file_path")
            target = target if isinstance(target, str) else None
            calls.append(Call(kind, name, target, error, where == last, text))
    return calls


def _all_texts(body: dict[str, Any]) -> list[str]:
    """Every text of the request: system blocks and message texts."""
    system = body.get("system")
    found = [system] if isinstance(system, str) else []
    parts: list[Any] = system if isinstance(system, list) else []
    for message in body.get("messages") or []:
        content = message.get("content")
        parts += content if isinstance(content, list) else []
        found += [content] if isinstance(content, str) else []
    found += [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return found


def _system(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system or "")
