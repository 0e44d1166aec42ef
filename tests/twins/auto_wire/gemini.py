"""The Gemini API, as the Gemini CLI sends it: write_file/read_file/run_shell_command."""

from __future__ import annotations

import json
import re
from typing import Any

from twins.auto_wire.base import Call, Conversation, Kind, Move, Read, Shell, Write, last_task
from twins.server import Reply, ToolCall

WORKDIR = re.compile(r"Workspace Directories:\*\*\s*\n\s*-\s*(\S+)|working in the directory: (\S+)")
KINDS: dict[str, Kind] = {"write_file": "write", "read_file": "read", "run_shell_command": "shell"}
FAILED = re.compile(r"Exit Code: [1-9]")
CONTEXT = re.compile(r"^\s*<session_context>.*</session_context>\s*$", re.S)


def read(body: dict[str, Any]) -> Conversation:
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    users = [
        (n, text)
        for n, c in enumerate(contents)
        if c.get("role") == "user"
        for text in ["\n".join(t for t in _texts(c) if not CONTEXT.fullmatch(t))]
    ]
    start, prompt = last_task(users)
    mine = contents[start:]
    found = (WORKDIR.search(t) for c in contents for t in _texts(c))
    workdir = next((m.group(1) or m.group(2) for m in found if m), None)
    return Conversation(
        prompt=prompt,
        turns=sum(1 for c in mine if c.get("role") == "model"),
        calls=_calls(mine),
        workdir=workdir,
        system="\n".join(_texts(body.get("systemInstruction") or {})),
    )


def reply(move: Move) -> Reply:
    if move.answer is not None:
        return Reply(text=json.dumps(move.answer))
    calls = []
    for action in move.actions:
        if isinstance(action, Write):
            calls.append(
                ToolCall("write_file", {"file_path": action.path, "content": action.content})
            )
        elif isinstance(action, Read):
            calls.append(ToolCall("read_file", {"file_path": action.path}))
        elif isinstance(action, Shell):
            args = {"command": action.command, "description": action.purpose}
            calls.append(ToolCall("run_shell_command", args))
    return Reply(tool_calls=calls, text="" if calls else move.text)


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


def _texts(content: dict[str, Any]) -> list[str]:
    return [str(p["text"]) for p in _parts(content) if "text" in p and not p.get("thought")]


def _calls(contents: list[dict[str, Any]]) -> list[Call]:
    # responses answer calls in order (ids are optional in Gemini's protocol)
    responses: list[tuple[int, dict[str, Any]]] = [
        (n, p["functionResponse"])
        for n, c in enumerate(contents)
        for p in _parts(c)
        if "functionResponse" in p
    ]
    last = len(contents) - 1
    calls = []
    for content in contents:
        if content.get("role") != "model":
            continue
        for part in _parts(content):
            if "functionCall" not in part:
                continue
            function = part["functionCall"]
            args = function.get("args") or {}
            name = str(function.get("name"))
            kind = KINDS.get(name, "other")
            target = args.get("command") if kind == "shell" else args.get("file_path")
            where, response = responses.pop(0) if responses else (-1, {})
            answer = response.get("response") or {}
            text = json.dumps(answer)[:2000]
            error = where < 0 or "error" in answer or bool(FAILED.search(text))
            target = target if isinstance(target, str) else None
            calls.append(Call(kind, name, target, error, where == last, text))
    return calls
