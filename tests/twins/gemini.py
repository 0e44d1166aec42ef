"""The Gemini API (generativelanguage v1beta), as the Gemini CLI uses it.

`POST /v1beta/models/{model}:streamGenerateContent?alt=sse` answers with server-sent
events, each a `GenerateContentResponse`: text parts in small chunks, then one
`functionCall` part per scripted tool call, and a last chunk with `finishReason` and
`usageMetadata`. `:generateContent` answers the same in one JSON body; `:countTokens`
and `GET /v1beta/models` are answered without consuming a scripted reply.

Usage: `Reply.usage` uses Anthropic names; here `promptTokenCount` includes cached
tokens (Google's convention), so it is input + cache_read + cache_creation, and
`cachedContentTokenCount` is cache_read_input_tokens.

Errors go out in Google's shape, `{"error": {"code", "message", "status"}}`; use
`api_error(429, "RESOURCE_EXHAUSTED", "...")` to build one.

What the Gemini CLI 0.61.0 calls, found by recording `twin.requests`: with a model
named (`-m`), only `streamGenerateContent` for each of the agent's turns. With the
default model `auto` it first asks a classifier (`gemini-3.5-flash-lite:generateContent`,
no tools) which model to route to. Usage statistics, unless turned off in settings.json,
go to play.googleapis.com, never to the base URL. Non-streaming calls that declare no
tools (that classifier, history compression, loop checks) are the CLI's own helpers:
they are answered without consuming a scripted reply, so the script only describes the
agent's turns. Every streamed call is an agent turn (even one with no tools declared,
as when a persona's permissions allow none).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from twins.server import Reply, Request, Route, apply_delay, words

_ids = itertools.count(1)


def api_error(code: int, status: str, message: str) -> tuple[int, dict[str, Any]]:
    """A `Reply.error` in the Gemini API's shape."""
    return code, {"error": {"code": code, "message": message, "status": status}}


def usage_metadata(reply: Reply) -> dict[str, int]:
    u = reply.usage
    cached = u.get("cache_read_input_tokens", 0)
    prompt = u.get("input_tokens", 0) + cached + u.get("cache_creation_input_tokens", 0)
    out = u.get("output_tokens", 0)
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": out}
    if cached:
        meta["cachedContentTokenCount"] = cached
    return meta | {"totalTokenCount": prompt + out}


def _model(req: Request) -> str:
    return req.match.group("model")


def _candidate(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return candidate


def _call_parts(reply: Reply) -> list[dict[str, Any]]:
    parts = []
    for call in reply.tool_calls:
        function: dict[str, Any] = {"name": call.name, "args": call.input}
        if call.id:
            function["id"] = call.id
        parts.append({"functionCall": function})
    return parts


def _chunk(req: Request, parts: list[dict[str, Any]], response_id: str) -> dict[str, Any]:
    return {
        "candidates": [_candidate(parts)],
        "modelVersion": _model(req),
        "responseId": response_id,
    }


def _last(req: Request, reply: Reply, parts: list[dict[str, Any]], rid: str) -> dict[str, Any]:
    return {
        "candidates": [_candidate(parts, "STOP")],
        "usageMetadata": usage_metadata(reply),
        "modelVersion": _model(req),
        "responseId": rid,
    }


def _failed(req: Request, reply: Reply, streaming: bool) -> bool:
    """Send the scripted failure, if any; True when the reply is used up by it."""
    if not apply_delay(reply):
        return True
    if reply.error is not None:
        status, body = reply.error
        req.send_json(status, body, reply.headers)
        return True
    if reply.garbage is not None:
        req.send_raw(200, reply.garbage, "text/event-stream" if streaming else "application/json")
        return True
    return False


SIDE_REPLY = Reply(text="{}", usage={"input_tokens": 1, "output_tokens": 1})


def is_side_call(body: Any) -> bool:
    """A non-streaming call without tools: one of the CLI's helpers, not an agent turn."""
    return isinstance(body, dict) and not body.get("tools")


def stream(req: Request) -> None:
    reply = req.reply()
    if _failed(req, reply, streaming=True):
        return
    rid = f"twin-{next(_ids):06d}"
    req.start_sse(reply.headers)
    chunks = list(words(reply.text)) if reply.text else []
    for chunk in chunks[:-1]:
        req.sse(_chunk(req, [{"text": chunk}], rid))
    last = [{"text": chunks[-1]}] if chunks else []
    req.sse(_last(req, reply, last + _call_parts(reply), rid))


def generate(req: Request) -> None:
    reply = SIDE_REPLY if is_side_call(req.body) else req.reply()
    if _failed(req, reply, streaming=False):
        return
    parts = ([{"text": reply.text}] if reply.text else []) + _call_parts(reply)
    req.send_json(200, _last(req, reply, parts, f"twin-{next(_ids):06d}"), reply.headers)


def count_tokens(req: Request) -> None:
    size = len(json.dumps(req.body)) // 4 if req.body else 0
    req.send_json(200, {"totalTokens": size})


MODELS = ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview"]


def models(req: Request) -> None:
    data = [{"name": f"models/{m}", "displayName": m, "inputTokenLimit": 1048576} for m in MODELS]
    req.send_json(200, {"models": data})


_MODEL = r"/v1(beta|alpha)?/models/(?P<model>[^/:]+)"

ROUTES: list[Route] = [
    ("POST", _MODEL + r":streamGenerateContent", stream),
    ("POST", _MODEL + r":generateContent", generate),
    ("POST", _MODEL + r":countTokens", count_tokens),
    ("GET", r"/v1(beta|alpha)?/models", models),
]
