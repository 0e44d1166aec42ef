"""OpenAI Responses, as the Codex CLI sends them.

Codex offers a shell (`exec_command`, or `shell` for some models) and, for some models,
an `apply_patch` tool; through a custom provider 0.169 offers only the shell, and its
shell runs `apply_patch <<EOF ... EOF` itself (the file change is reported as such). So
a write is an `apply_patch` "Add File" patch (through the tool when offered, else the
shell), a read is `cat`, a structured answer (`--output-schema`, sent as
`text.format`) is the JSON text of the final message.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from twins.auto_wire.base import Call, Conversation, Kind, Move, Read, Shell, Write, last_task
from twins.server import Reply, ToolCall

WORKDIR = re.compile(r"<cwd>([^<]+)</cwd>")
ADDED = re.compile(r"^\*\*\* Add File: (.+)$", re.M)
READ = re.compile(r"^cat -- (.+)$")
FAILED = re.compile(
    r"exited with code [1-9]|Exit code: [1-9]|^(?:error|Error)\b|^patch rejected", re.M
)
# Codex's own context messages: <environment_context>, <user_instructions>, AGENTS.md
CONTEXT = re.compile(r"^\s*(?:<([\w ]+)>.*</\1>|# AGENTS\.md instructions.*)\s*$", re.S)
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")
END = "TWIN_PATCH_END"


def read(body: dict[str, Any]) -> Conversation:
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    users = [
        (n, text)
        for n, item in enumerate(items)
        if item.get("type") == "message" and item.get("role") == "user"
        for text in [_text(item)]
        if not CONTEXT.fullmatch(text)
    ]
    start, prompt = last_task(users)
    mine = items[start:]
    fmt = (body.get("text") or {}).get("format") or {}
    texts = [_text(i) for i in items if i.get("type") == "message"]
    return Conversation(
        prompt=prompt,
        turns=_turns(mine),
        calls=_calls(mine),
        workdir=next((m.group(1).strip() for t in texts if (m := WORKDIR.search(t))), None),
        answer_schema=fmt.get("schema") if fmt.get("type") == "json_schema" else None,
        system="\n".join(_text(i) for i in items if i.get("role") == "developer"),
    )


def reply(move: Move, body: dict[str, Any]) -> Reply:
    if move.answer is not None:
        return Reply(text=json.dumps(move.answer))
    tools = {t.get("name"): t for t in body.get("tools") or [] if isinstance(t, dict)}
    calls = [_call(action, tools) for action in move.actions]
    return Reply(tool_calls=calls, text="" if calls else move.text)


def _call(action: Write | Read | Shell, tools: dict[Any, dict[str, Any]]) -> ToolCall:
    if isinstance(action, Write):
        patch = _patch(action)
        if "apply_patch" in tools:  # custom (freeform) or function: its input is the patch
            return ToolCall("apply_patch", {"input": patch})
        return _shell(f"apply_patch <<'{END}'\n{patch}{END}\n", tools)
    if isinstance(action, Read):
        return _shell(f"cat -- {shlex.quote(action.path)}", tools)
    return _shell(action.command, tools)


def _shell(command: str, tools: dict[Any, dict[str, Any]]) -> ToolCall:
    if "exec_command" in tools or "shell" not in tools:
        return ToolCall("exec_command", {"cmd": command})
    return ToolCall("shell", {"command": ["bash", "-lc", command]})


def _patch(write: Write) -> str:
    body = "".join(f"+{line}\n" for line in write.content.splitlines())
    return f"*** Begin Patch\n*** Add File: {write.path}\n{body}*** End Patch\n"


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(p.get("text", "")) for p in content or [] if isinstance(p, dict) and "text" in p
    )


def _turns(items: list[dict[str, Any]]) -> int:
    """Assistant turns: each run of assistant messages and tool calls is one."""
    turns, inside = 0, False
    for item in items:
        mine = item.get("type") in CALLS or (
            item.get("type") == "message" and item.get("role") == "assistant"
        )
        turns += mine and not inside
        inside = mine or (inside and item.get("type") == "reasoning")
    return turns


def _command(item: dict[str, Any]) -> str:
    if item.get("type") == "custom_tool_call":
        return str(item.get("input") or "")
    try:
        args = json.loads(item.get("arguments") or "{}")
    except ValueError:
        return ""
    if item.get("name") == "apply_patch":
        return str(args.get("input") or "")
    command = args.get("cmd") or args.get("command") or ""
    return command[-1] if isinstance(command, list) and command else str(command)


def _calls(items: list[dict[str, Any]]) -> list[Call]:
    outputs = {
        str(i.get("call_id")): (n, i) for n, i in enumerate(items) if i.get("type") in OUTPUTS
    }
    trailing = len(items)
    while trailing and items[trailing - 1].get("type") in OUTPUTS:
        trailing -= 1
    calls = []
    for item in items:
        if item.get("type") not in CALLS:
            continue
        command = _command(item)
        where, output = outputs.get(str(item.get("call_id")), (-1, {}))
        text = output.get("output")
        text = text if isinstance(text, str) else json.dumps(text)
        kind: Kind = "shell"
        target: str | None = command
        if added := ADDED.search(command):
            kind, target = "write", added.group(1).strip()
        elif read_ := READ.match(command):
            kind, target = "read", shlex.split(read_.group(1))[0]
        error = where < 0 or bool(FAILED.search(text or ""))
        calls.append(
            Call(kind, str(item.get("name")), target, error, where >= trailing, text or "")
        )
    return calls
