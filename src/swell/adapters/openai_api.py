"""The `openai` adapter: one chat completion over an OpenAI-compatible HTTP API.

Works with api.openai.com and the servers that copy its wire format (Ollama, vLLM,
LM Studio, llama.cpp's server, hosted gateways). It has no tools: the model answers
in text, or in JSON when the request carries a `json_schema`. Settings
(`adapters.NAME.options`) are `OpenAIOptions`; the API key is read from the
environment variable `api_key_env` names, never from the manifest.

HTTP failures are translated into swell's AgentError tree here, at the boundary;
retries belong to the core. `request.timeout_s` bounds the whole exchange.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import httpx
from pydantic import BaseModel, ConfigDict, Field

from swell import __version__
from swell.adapters.base import (
    AdapterSetup,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentText,
    AgentUsageUpdate,
    Capabilities,
    Usage,
)
from swell.adapters.chat_format import error_from_body, message_of, parse_json, usage_of
from swell.errors import (
    AgentCrashed,
    AgentError,
    AgentTimeout,
    AuthFailed,
    ContextExhausted,
    RateLimited,
    UnparseableOutput,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CONNECT_TIMEOUT_S = 10.0

Queue: TypeAlias = asyncio.Queue[AgentEvent | None]


class OpenAIOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(
        default=None,
        description="API root, usually ending in /v1; default $OPENAI_BASE_URL, else https://api.openai.com/v1",
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="environment variable holding the API key; no key is sent when it is unset",
    )
    max_tokens: int | None = Field(default=None, gt=0, description="cap on the answer's tokens")
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens",
        description="request field carrying max_tokens (OpenAI's reasoning models need max_completion_tokens)",
    )
    stream: bool = Field(default=True, description="stream the answer (SSE) with usage")
    strict_schema: bool = Field(
        default=False,
        description="send the JSON schema with strict: true (OpenAI then requires every property in `required` and additionalProperties: false)",
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="extra HTTP headers; not for secrets, the manifest is not secret",
    )


@dataclass
class _Answer:
    """What the server said, gathered from a stream or from one JSON body."""

    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    done: bool = False  # saw `[DONE]` or a complete (non-streamed) body


class OpenAIAdapter:
    Options = OpenAIOptions
    name = "openai"
    capabilities = Capabilities(
        resume=False, tools=False, enforces_permissions=True, json_schema=True
    )

    def __init__(self, setup: AdapterSetup) -> None:
        self.options = OpenAIOptions.model_validate(setup.options)
        self.env_passthrough: tuple[str, ...] = (self.options.api_key_env, "OPENAI_BASE_URL")

    def _env(self, request: AgentRequest, name: str) -> str | None:
        return request.env.get(name) or os.environ.get(name) or None

    def base_url(self, request: AgentRequest) -> str:
        url = self.options.base_url or self._env(request, "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        return url.rstrip("/")

    def headers(self, request: AgentRequest) -> dict[str, str]:
        headers = {"User-Agent": f"swell/{__version__}", **self.options.headers}
        key = self._env(request, self.options.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def payload(self, request: AgentRequest) -> dict[str, Any]:
        """The chat-completions request body for one agent turn."""
        messages = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if self.options.max_tokens is not None:
            body[self.options.max_tokens_param] = self.options.max_tokens
        if request.json_schema is not None:
            spec: dict[str, Any] = {
                "name": schema_name(request.json_schema),
                "schema": request.json_schema,
            }
            if self.options.strict_schema:
                spec["strict"] = True
            body["response_format"] = {"type": "json_schema", "json_schema": spec}
        if self.options.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        if not request.model:
            missing = AgentError(
                "openai adapter: no model set (give the persona or step a `model`, "
                "or the adapter a `default_model`)"
            )
            yield AgentFinished(AgentResult.failed(missing))
            return
        answer = _Answer()
        queue: Queue = asyncio.Queue()
        # the HTTP exchange runs as its own task so the deadline never counts the
        # time our consumer spends between events
        task = asyncio.create_task(self._call(request, answer, queue))
        try:
            while (event := await queue.get()) is not None:
                yield event
            error = await task
        finally:
            task.cancel()
        yield AgentFinished(_result(request, answer, error))

    async def _call(
        self, request: AgentRequest, answer: _Answer, queue: Queue
    ) -> AgentError | None:
        """Make the HTTP call, feeding events to `queue`; the error, or None."""
        url = self.base_url(request)
        limit = request.timeout_s
        try:
            async with asyncio.timeout(limit):
                timeout = httpx.Timeout(limit, connect=CONNECT_TIMEOUT_S)
                async with httpx.AsyncClient(
                    timeout=timeout, headers=self.headers(request)
                ) as client:
                    await self._exchange(client, url, request, answer, queue)
            return None
        except AgentError as exc:
            return exc
        except httpx.ConnectTimeout:
            return AgentTimeout(
                f"cannot reach {url}: connecting timed out after {CONNECT_TIMEOUT_S:g}s"
            )
        except httpx.ConnectError as exc:
            return AgentCrashed(
                f"cannot reach {url}: {exc or 'connection failed'} (is the server running?)"
            )
        except (TimeoutError, httpx.TimeoutException):
            return AgentTimeout(f"no complete answer from {url} within {limit or 0:g}s")
        except httpx.HTTPError as exc:
            return AgentCrashed(f"talking to {url} failed: {type(exc).__name__}: {exc}")
        finally:
            queue.put_nowait(None)

    async def _exchange(
        self,
        client: httpx.AsyncClient,
        url: str,
        request: AgentRequest,
        answer: _Answer,
        queue: Queue,
    ) -> None:
        body = self.payload(request)
        async with client.stream("POST", f"{url}/chat/completions", json=body) as response:
            if response.status_code >= 400:
                await response.aread()
                raise http_error(response, url, request.model or "", self.options.api_key_env)
            if "text/event-stream" in response.headers.get("content-type", ""):
                async for data in _sse_data(response, answer):
                    _take(data, answer, queue)
            else:  # not streamed: asked so, or the server ignored `stream`
                data = _json(await response.aread(), "response")
                if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
                    raise UnparseableOutput(
                        f"the server's response has no choices: {str(data)[:200]}"
                    )
                _take(data, answer, queue)
                answer.done = True


def _result(request: AgentRequest, answer: _Answer, error: AgentError | None) -> AgentResult:
    text = "".join(answer.text)
    usage = answer.usage or Usage()
    if error is None and not answer.done and answer.finish_reason is None:
        error = AgentCrashed("the answer stream ended before the model finished")
    if error is None and not text and answer.refusal:
        error = AgentError(f"the model refused: {''.join(answer.refusal)}")
    if error is not None:
        return AgentResult.failed(error, text=text, usage=usage)
    if request.json_schema is None:
        return AgentResult(success=True, text=text, usage=usage)
    try:
        structured = parse_json(text)
    except ValueError as exc:
        cut = " (cut off at max_tokens)" if answer.finish_reason == "length" else ""
        failure = UnparseableOutput(f"the model's answer is not valid JSON{cut}: {exc}")
        return AgentResult.failed(failure, text=text, usage=usage)
    return AgentResult(success=True, text=text, structured=structured, usage=usage)


# --- the wire format ------------------------------------------------------------------


async def _sse_data(response: httpx.Response, answer: _Answer) -> AsyncIterator[Any]:
    """The JSON payloads of a server-sent-event stream, up to `[DONE]`."""
    async for line in response.aiter_lines():
        if not line or line.startswith((":", "event:", "id:", "retry:")):
            continue
        if not line.startswith("data:"):
            raise UnparseableOutput(f"unexpected line in the event stream: {line[:200]!r}")
        data = line[5:].strip()
        if data == "[DONE]":
            answer.done = True
            return
        yield _json(data.encode(), "stream chunk")


def _json(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise UnparseableOutput(f"the server's {what} is not JSON: {raw[:200]!r}") from None


def _take(data: Any, answer: _Answer, queue: Queue) -> None:
    """Fold one chunk (or a whole response) into `answer`, emitting events."""
    if not isinstance(data, dict):
        raise UnparseableOutput(f"unexpected chunk from the server: {str(data)[:200]}")
    if data.get("error"):
        raise error_from_body(data, "the server reported an error mid-answer")
    for choice in data.get("choices") or []:
        part = choice.get("delta") or choice.get("message") or {}
        content = part.get("content")
        if isinstance(content, str) and content:
            answer.text.append(content)
            queue.put_nowait(AgentText(content))
        if isinstance(part.get("refusal"), str):
            answer.refusal.append(part["refusal"])
        if choice.get("finish_reason"):
            answer.finish_reason = choice["finish_reason"]
    if isinstance(data.get("usage"), dict):
        answer.usage = usage_of(data["usage"])
        queue.put_nowait(AgentUsageUpdate(answer.usage))


def schema_name(schema: dict[str, Any]) -> str:
    """A `json_schema.name` OpenAI accepts: the schema's title, cleaned, or "output"."""
    title = schema.get("title")
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", title).strip("_")[:64] if isinstance(title, str) else ""
    return name or "output"


# --- HTTP failures → AgentError ---------------------------------------------------------


def http_error(response: httpx.Response, url: str, model: str, key_env: str) -> AgentError:
    """Classify a failed HTTP response into swell's AgentError tree."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text[:300] or response.reason_phrase
    status = response.status_code
    where = f"{url} answered {status}"
    message = message_of(body)
    if status in (401, 403):
        return AuthFailed(f"{where}: {message} (check ${key_env})")
    if status in (429, 503, 529):
        after = response.headers.get("retry-after")
        return RateLimited(f"{where}: {message}" + (f" (retry after {after}s)" if after else ""))
    if status == 404:
        return AgentError(
            f"{where}: {message} (is model '{model}' served there, and is the base_url right?)"
        )
    found = error_from_body(body, where)
    if isinstance(found, ContextExhausted) or status >= 500:
        return found
    return AgentError(str(found))  # the server rejected the request itself


__all__ = ["OpenAIAdapter", "OpenAIOptions", "http_error", "parse_json", "usage_of"]
