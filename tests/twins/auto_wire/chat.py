"""OpenAI Chat Completions, as opencode sends them: write/read/bash."""

from __future__ import annotations

import json
import re
from typing import Any

from twins.auto_wire.base import Call, Conversation, Kind, Move, Read, Shell, Write, last_task
from twins.server import Reply, ToolCall

WORKDIR = re.compile(r"Working directory: (\S+)")
KINDS: dict[str, Kind] = {"write": "write", "read": "read", "bash": "shell"}
FAILED = re.compile(r"^\s*(?:Error|error)\b")


def read(body: dict[str, Any]) -> Conversation:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    start, prompt = last_task(
        [(n, _text(m)) for n, m in enumerate(messages) if m.get("role") == "user"]
    )
    mine = messages[start:]
    fmt = body.get("response_format") or {}
    schema = (
        (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" else None
    )
    return Conversation(
        prompt=prompt,
        turns=sum(1 for m in mine if m.get("role") == "assistant"),
        calls=_calls(mine),
        workdir=next((w.group(1) for m in messages if (w := WORKDIR.search(_text(m)))), None),
        answer_schema=schema,
        system="\n".join(_text(m) for m in messages if m.get("role") == "system"),
        side_call=not body.get("tools") and schema is None,
    )


def reply(move: Move) -> Reply:
    if move.answer is not None:
        return Reply(text=json.dumps(move.answer))
    calls = []
    for action in move.actions:
        if isinstance(action, Write):
            calls.append(ToolCall("write", {"filePath": action.path, "content": action.content}))
        elif isinstance(action, Read):
            calls.append(ToolCall("read", {"filePath": action.path}))
        elif isinstance(action, Shell):
            calls.append(
                ToolCall("bash", {"command": action.command, "description": action.purpose})
            )
    return Reply(tool_calls=calls, text="" if calls else move.text)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(p.get("text", ""))
        for p in content or []
        if isinstance(p, dict) and p.get("type") == "text"
    )


def _calls(messages: list[dict[str, Any]]) -> list[Call]:
    results = {
        str(m.get("tool_call_id")): (n, _text(m))
        for n, m in enumerate(messages)
        if m.get("role") == "tool"
    }
    trailing = len(messages)
    while trailing and messages[trailing - 1].get("role") == "tool":
        trailing -= 1
    calls = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                args = json.loads(function.get("arguments") or "{}")
            except ValueError:
                args = {}
            name = str(function.get("name"))
            kind = KINDS.get(name, "other")
            target = args.get("command") if kind == "shell" else args.get("filePath")
            where, text = results.get(str(call.get("id")), (-1, ""))
            error = where < 0 or bool(FAILED.match(text))
            target = target if isinstance(target, str) else None
            calls.append(Call(kind, name, target, error, where >= trailing, text))
    return calls
