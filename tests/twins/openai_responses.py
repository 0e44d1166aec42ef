"""The OpenAI Responses API, as the Codex CLI speaks it.

`POST /v1/responses` answers with a server-sent event stream: `response.created`,
then per output item `response.output_item.added` → deltas → `response.output_item.done`
(assistant `message` items with `output_text` deltas; `function_call` items with
argument deltas; `custom_tool_call` items for freeform tools such as Codex's
`apply_patch`), and finally `response.completed` carrying the usage.

A scripted `ToolCall` becomes a `custom_tool_call` when the request declares that
tool as `type: custom` (its input is then `input["input"]`, a raw string), and a
`function_call` otherwise (its input serialised as the JSON arguments).

Usage: `Reply.usage` uses Anthropic names; here `input_tokens` includes cached
tokens (OpenAI's convention), so it is input + cache_read + cache_creation, and
`input_tokens_details.cached_tokens` is cache_read_input_tokens.

`GET /v1/models` lists one model (Codex 0.169 did not ask for it with a custom
provider). Codex's built-in `openai` provider first tries a WebSocket on
`GET /v1/responses`; the twin has no such route, so point Codex at the twin through a
custom provider (wire_api = "responses"), which speaks plain HTTPS/SSE.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from twins.server import Reply, Request, Route, apply_delay, words

_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


def usage_of(reply: Reply) -> dict[str, Any]:
    u = reply.usage
    cached = u.get("cache_read_input_tokens", 0)
    total_in = u.get("input_tokens", 0) + cached + u.get("cache_creation_input_tokens", 0)
    out = u.get("output_tokens", 0)
    return {
        "input_tokens": total_in,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total_in + out,
    }


def _custom_tools(body: Any) -> set[str]:
    tools = body.get("tools", []) if isinstance(body, dict) else []
    return {t.get("name", "") for t in tools if isinstance(t, dict) and t.get("type") == "custom"}


def _message_item(text: str, item_id: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if text else []
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": status,
        "content": content,
    }


def responses(req: Request) -> None:
    reply = req.reply()
    if not apply_delay(reply):
        return
    if reply.error is not None:
        status, body = reply.error
        req.send_json(status, body, reply.headers)
        return
    if reply.garbage is not None:
        req.send_raw(200, reply.garbage, "text/event-stream")
        return
    response_id = _id("resp")
    model = req.body.get("model", "twin") if isinstance(req.body, dict) else "twin"
    base = {"id": response_id, "object": "response", "model": model}
    req.start_sse(reply.headers)
    seq = itertools.count()

    def emit(kind: str, **data: Any) -> None:
        req.sse({"type": kind, "sequence_number": next(seq), **data}, event=kind)

    emit("response.created", response={**base, "status": "in_progress", "output": []})
    output: list[dict[str, Any]] = []
    if reply.text:
        index, item_id = len(output), _id("msg")
        emit(
            "response.output_item.added",
            output_index=index,
            item=_message_item("", item_id, "in_progress"),
        )
        for chunk in words(reply.text):
            emit(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=chunk,
            )
        emit(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=reply.text,
        )
        item = _message_item(reply.text, item_id, "completed")
        emit("response.output_item.done", output_index=index, item=item)
        output.append(item)
    custom = _custom_tools(req.body)
    for call in reply.tool_calls:
        index, item_id, call_id = len(output), _id("fc"), call.id or _id("call")
        if call.name in custom:
            raw = str(call.input.get("input", ""))
            item = {"type": "custom_tool_call", "id": item_id, "call_id": call_id}
            item |= {"name": call.name, "input": raw, "status": "completed"}
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "input": "", "status": "in_progress"},
            )
            at = {"item_id": item_id, "output_index": index}
            emit("response.custom_tool_call_input.delta", **at, delta=raw)
            emit("response.custom_tool_call_input.done", **at, input=raw)
        else:
            args = json.dumps(call.input)
            item = {"type": "function_call", "id": item_id, "call_id": call_id}
            item |= {"name": call.name, "arguments": args, "status": "completed"}
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            for chunk in words(args, 24):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item_id,
                    output_index=index,
                    delta=chunk,
                )
            emit(
                "response.function_call_arguments.done",
                item_id=item_id,
                output_index=index,
                arguments=args,
            )
        emit("response.output_item.done", output_index=index, item=item)
        output.append(item)
    emit(
        "response.completed",
        response={**base, "status": "completed", "output": output, "usage": usage_of(reply)},
    )


def models(req: Request) -> None:
    req.send_json(
        200,
        {"object": "list", "data": [{"id": "twin-model", "object": "model", "owned_by": "twin"}]},
    )


ROUTES: list[Route] = [
    ("POST", r"(/v1)?/responses", responses),
    ("GET", r"(/v1)?/models", models),
]
