"""OpenAI Chat Completions, as served by api.openai.com and every compatible server.

Routes: `POST /v1/chat/completions` (streaming SSE and plain JSON) and `GET /v1/models`
(also without the `/v1` prefix, as llama.cpp and LM Studio accept).

What a reply becomes on the wire:
- `Reply.text` is the assistant's content, streamed in small chunks when the request
  says `stream: true`; with `stream_options.include_usage` every chunk carries
  `"usage": null` and one last chunk with empty `choices` carries the usage.
- `Reply.tool_calls` become `tool_calls` (`function.arguments` is a JSON string,
  streamed in pieces), and `finish_reason` is `"tool_calls"`.
- `Reply.usage` uses Anthropic-style names; `prompt_tokens` counts cached tokens too
  (as OpenAI does) and `prompt_tokens_details.cached_tokens` says how many.
- `response_format: {type: json_schema, ...}` is checked the way OpenAI checks it
  (a `json_schema.name` and an object `schema`) and answered with the scripted text.
- `Reply.error` is sent as given (use the helpers below for OpenAI-shaped bodies);
  `Reply.garbage` is sent raw instead of a response; `Reply.hang` never answers.

Malformed requests (no model, no messages) get OpenAI's 400 without consuming a reply.
`GET /v1/models` lists `twin.models` when a test sets that attribute, else `twin-model`.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from twins.server import Reply, Request, ToolCall, apply_delay, words

DEFAULT_MODELS = ("twin-model",)
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


# --- OpenAI-shaped failures a test can script ---------------------------------------


def error_body(
    message: str, type_: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def rate_limited(retry_after: float = 1.0) -> Reply:
    return Reply(
        error=(
            429,
            error_body(
                "Rate limit reached for requests. Please try again in 1s.",
                "requests",
                "rate_limit_exceeded",
            ),
        ),
        headers={"retry-after": f"{retry_after:g}"},
    )


def unauthorized() -> Reply:
    return Reply(
        error=(
            401,
            error_body(
                "Incorrect API key provided: sk-wrong. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            ),
        )
    )


def context_length_exceeded(limit: int = 8192, requested: int = 9000) -> Reply:
    return Reply(
        error=(
            400,
            error_body(
                f"This model's maximum context length is {limit} tokens. However, your "
                f"messages resulted in {requested} tokens. Please reduce the length of the messages.",
                "invalid_request_error",
                "context_length_exceeded",
                "messages",
            ),
        )
    )


def server_error() -> Reply:
    return Reply(
        error=(
            500,
            error_body("The server had an error while processing your request.", "server_error"),
        )
    )


# --- the wire format -----------------------------------------------------------------


def _usage(reply: Reply) -> dict[str, Any]:
    u = reply.usage
    cached = u.get("cache_read_input_tokens", u.get("cache_read_tokens", 0))
    prompt = u.get("input_tokens", 0) + cached + u.get("cache_creation_input_tokens", 0)
    completion = u.get("output_tokens", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def _call_id(call: ToolCall, index: int) -> str:
    return call.id or f"call_twin{index:04d}"


def _bad_request(
    req: Request, message: str, param: str | None = None, code: str | None = None
) -> None:
    req.send_json(400, error_body(message, "invalid_request_error", code, param))


def _check(req: Request) -> bool:
    """Validate the request as OpenAI does; answer 400 and return False when it is bad."""
    body = req.body
    if not isinstance(body, dict):
        _bad_request(req, "We could not parse the JSON body of your request.")
        return False
    if not body.get("model"):
        _bad_request(req, "you must provide a model parameter", "model")
        return False
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        _bad_request(
            req, "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"
        )
        return False
    fmt = body.get("response_format")
    if fmt is None:
        return True
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        _bad_request(
            req,
            f"Invalid value: '{kind}'. Supported values are: 'text', 'json_object', and 'json_schema'.",
            "response_format.type",
            "invalid_value",
        )
        return False
    if kind == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or "name" not in spec:
            _bad_request(
                req,
                "Missing required parameter: 'response_format.json_schema.name'.",
                "response_format.json_schema.name",
                "missing_required_parameter",
            )
            return False
        if not _SCHEMA_NAME.fullmatch(str(spec["name"])):
            _bad_request(
                req,
                "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                "response_format.json_schema.name",
                "invalid_value",
            )
            return False
        if "schema" in spec and not isinstance(spec["schema"], dict):
            _bad_request(
                req,
                "Invalid type for 'response_format.json_schema.schema': expected an object.",
                "response_format.json_schema.schema",
                "invalid_type",
            )
            return False
    return True


def _answer_stream(req: Request, reply: Reply, base: dict[str, Any], with_usage: bool) -> None:
    extra = {"usage": None} if with_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        req.sse({**base, "choices": [choice], **extra})

    req.start_sse(reply.headers)
    chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in words(reply.text):
        chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": _call_id(call, index),
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in words(json.dumps(call.input), 16):
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    chunk({}, "tool_calls" if reply.tool_calls else "stop")
    if with_usage:
        req.sse({**base, "choices": [], "usage": _usage(reply)})
    req.sse("[DONE]")


def _answer_json(req: Request, reply: Reply, base: dict[str, Any]) -> None:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if reply.text or not reply.tool_calls else None,
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(call, index),
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.input)},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
    }
    data = {**base, "object": "chat.completion", "choices": [choice], "usage": _usage(reply)}
    req.send_json(200, data, reply.headers)


def chat_completions(req: Request) -> None:
    if not _check(req):
        return
    reply = req.reply()
    if not apply_delay(reply):
        return
    if reply.garbage is not None:
        stream = bool(req.body.get("stream"))
        req.send_raw(200, reply.garbage, "text/event-stream" if stream else "application/json")
        return
    if reply.error is not None:
        status, body = reply.error
        req.send_json(status, body, reply.headers)
        return
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": req.body["model"],
        "system_fingerprint": "fp_twin",
    }
    if req.body.get("stream"):
        options = req.body.get("stream_options") or {}
        _answer_stream(req, reply, base, bool(options.get("include_usage")))
    else:
        _answer_json(req, reply, base)


def models(req: Request) -> None:
    names = getattr(req.twin, "models", DEFAULT_MODELS)
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "twin"} for name in names]
    req.send_json(200, {"object": "list", "data": data})


ROUTES = [
    ("POST", r"(/v1)?/chat/completions", chat_completions),
    ("GET", r"(/v1)?/models", models),
]
