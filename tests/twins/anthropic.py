"""The Anthropic Messages API, as Claude Code uses it.

`POST /v1/messages` streams (SSE) when the body says `stream: true` and answers in
one JSON body otherwise (Claude Code falls back to that when a stream breaks);
scripted `Reply` objects become text and `tool_use` blocks, HTTP errors, garbage
or a hang. Usage: `input_tokens`, `output_tokens`, `cache_read_input_tokens` and
`cache_creation_input_tokens` of `Reply.usage` go out as they are.

What else Claude Code 2.1.330 calls, found by recording `twin.requests`:
- `HEAD /api/hello` (a connectivity check; not sent when
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC is set) gets 200;
- nothing else on the base URL in `-p` runs; its telemetry goes straight to
  api.anthropic.com (through HTTPS_PROXY if set), and the nonessential-traffic
  switch stops that too.
Side calls a CLI may make (session titles, summaries, classifiers, quota probes:
`messages` calls without tools) and `count_tokens`/`models` are answered without
consuming a scripted reply, so the script only describes the agent's own turns.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from twins.server import Reply, Request, Route, apply_delay, words

_ids = itertools.count(1)


def _usage(reply: Reply) -> dict[str, int]:
    u = reply.usage
    return {
        "input_tokens": u.get("input_tokens", 0),
        "output_tokens": u.get("output_tokens", 0),
        "cache_read_input_tokens": u.get("cache_read_input_tokens", 0),
        "cache_creation_input_tokens": u.get("cache_creation_input_tokens", 0),
    }


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_twin_{next(_ids):04d}",
                "name": call.name,
                "input": call.input,
            }
        )
    return blocks


def _message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {
        "id": f"msg_twin_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-twin"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.tool_calls else "end_turn"


def answer(req: Request, reply: Reply) -> None:
    """Send `reply` in the shape the request asked for (stream or one body)."""
    if not apply_delay(reply):
        return
    if reply.error:
        status, body = reply.error
        req.send_json(status, body, reply.headers)
        return
    if reply.garbage is not None:
        req.send_raw(
            200, reply.garbage, "text/event-stream" if _streams(req) else "application/json"
        )
        return
    body = req.body if isinstance(req.body, dict) else {}
    message = _message(body, reply)
    blocks = _blocks(reply)
    if not _streams(req):
        message.update(content=blocks, stop_reason=_stop_reason(reply))
        req.send_json(200, message, reply.headers)
        return
    req.start_sse(reply.headers)
    usage = message["usage"]
    start = dict(message, usage=dict(usage, output_tokens=1))
    req.sse({"type": "message_start", "message": start}, "message_start")
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            req.sse(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            for chunk in words(block["text"]):
                delta = {"type": "text_delta", "text": chunk}
                req.sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
        else:
            opening = dict(block, input={})
            req.sse(
                {"type": "content_block_start", "index": index, "content_block": opening},
                "content_block_start",
            )
            for chunk in words(json.dumps(block["input"]), 24):
                delta = {"type": "input_json_delta", "partial_json": chunk}
                req.sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
        req.sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    req.sse(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
        "message_delta",
    )
    req.sse({"type": "message_stop"}, "message_stop")


def _streams(req: Request) -> bool:
    return isinstance(req.body, dict) and bool(req.body.get("stream"))


SIDE_REPLY = Reply(text="ok", usage={"input_tokens": 1, "output_tokens": 1})


def is_side_call(body: Any) -> bool:
    """A model call that is not one of the agent's turns: the agent loop always sends tools."""
    return isinstance(body, dict) and not body.get("tools")


def messages(req: Request) -> None:
    answer(req, SIDE_REPLY if is_side_call(req.body) else req.reply())


def count_tokens(req: Request) -> None:
    size = len(json.dumps(req.body)) // 4 if req.body else 0
    req.send_json(200, {"input_tokens": size})


MODELS = ["claude-opus-5-5", "claude-sonnet-4-5", "claude-haiku-4-5"]


def models(req: Request) -> None:
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
        for m in MODELS
    ]
    req.send_json(
        200, {"data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]}
    )


def ok(req: Request) -> None:
    req.send_json(200, {})


ROUTES: list[Route] = [
    ("POST", r"/v1/messages/count_tokens", count_tokens),
    ("POST", r"/v1/messages", messages),
    ("GET", r"/v1/models", models),
    ("HEAD", r"/api/hello|/", ok),
    ("GET", r"/api/hello|/", ok),
]
