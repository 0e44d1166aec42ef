"""The OpenAI chat-completions format, as data: usage, JSON answers, error bodies.

llama.cpp's server speaks it too, so the `local` adapter reads its chunks with these
helpers; they need no HTTP client (importing one costs a run on the embedded model
tens of milliseconds before its first answer).
"""

from __future__ import annotations

import json
import re
from typing import Any

from swell.adapters.base import Usage
from swell.errors import AgentCrashed, AgentError, ContextExhausted

# how servers say "the prompt does not fit": OpenAI's code, llama.cpp's type, and the
# words of vLLM, Ollama, LM Studio and gateways that only send a message
CONTEXT_CODES = {"context_length_exceeded", "exceed_context_size_error"}
CONTEXT_TEXT = re.compile(
    r"context length|context window|context size|maximum context|prompt is too long", re.IGNORECASE
)
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


def usage_of(raw: dict[str, Any]) -> Usage:
    """OpenAI usage → swell Usage (input_tokens excludes cache reads, as elsewhere)."""
    prompt = int(raw.get("prompt_tokens") or 0)
    details = raw.get("prompt_tokens_details")
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=cached,
    )


def parse_json(text: str) -> Any:
    """The JSON value of a model's answer; tolerates one ```json fence around it."""
    candidate = text.strip()
    fenced = _FENCE.match(candidate)
    return json.loads(fenced.group(1) if fenced else candidate)


def message_of(body: Any) -> str:
    """The human-readable message of an error body."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return str(error.get("message") or error.get("detail") or json.dumps(error)[:300])
    return str(error)[:300]


def error_from_body(body: Any, where: str) -> AgentError:
    """ContextExhausted when the error says the prompt does not fit, else AgentCrashed."""
    error = body.get("error", body) if isinstance(body, dict) else body
    message = message_of(body)
    codes = {str(error.get(k)) for k in ("code", "type")} if isinstance(error, dict) else set()
    if codes & CONTEXT_CODES or CONTEXT_TEXT.search(message):
        return ContextExhausted(f"{where}: {message}")
    return AgentCrashed(f"{where}: {message}")


__all__ = ["error_from_body", "message_of", "parse_json", "usage_of"]
