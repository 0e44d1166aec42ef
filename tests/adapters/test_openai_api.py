"""The `openai` adapter against the OpenAI Chat Completions twin."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from swell.adapters.base import (
    AdapterSetup,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentText,
    AgentUsageUpdate,
)
from swell.adapters.openai_api import OpenAIAdapter, parse_json, schema_name
from twins import openai_chat
from twins.server import Reply, Twin

VERDICT = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "rework", "fail"]},
        "summary": {"type": "string"},
    },
    "required": ["verdict", "summary"],
    "additionalProperties": False,
}


def adapter(base_url: str, **options: Any) -> OpenAIAdapter:
    return OpenAIAdapter(AdapterSetup("openai", options={"base_url": base_url, **options}))


def request(tmp_path: Path, **fields: Any) -> AgentRequest:
    values: dict[str, Any] = {
        "prompt": "Say hello.",
        "system_prompt": "You are terse.",
        "workspace": tmp_path,
        "model": "twin-model",
        "env": {"OPENAI_API_KEY": "sk-test"},
        "timeout_s": 10.0,
    }
    return AgentRequest(**{**values, **fields})


def run(adapter: OpenAIAdapter, req: AgentRequest) -> tuple[list[AgentEvent], AgentResult]:
    async def collect() -> list[AgentEvent]:
        return [event async for event in adapter.run(req)]

    events = asyncio.run(collect())
    assert isinstance(events[-1], AgentFinished), events
    assert not any(isinstance(e, AgentFinished) for e in events[:-1])
    return events, events[-1].result


def twin(*replies: Reply) -> Twin:
    return Twin(list(replies), protocols=("openai_chat",))


TEXT = "Hello! This answer is long enough to arrive in several chunks."


@pytest.mark.parametrize("stream", [True, False])
def test_text_answer_with_usage(tmp_path: Path, stream: bool) -> None:
    usage = {"input_tokens": 120, "output_tokens": 15, "cache_read_input_tokens": 30}
    with twin(Reply(text=TEXT, usage=usage)) as server:
        events, result = run(
            adapter(server.url + "/v1", stream=stream, max_tokens=64),
            request(tmp_path, temperature=0.2),
        )
        sent = server.model_calls[0]

    assert result.success, result.error
    assert result.text == TEXT
    texts = [e.text for e in events if isinstance(e, AgentText)]
    assert "".join(texts) == TEXT
    assert len(texts) > 1 if stream else len(texts) == 1
    updates = [e.usage for e in events if isinstance(e, AgentUsageUpdate)]
    assert updates and updates[-1] == result.usage
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (120, 30)
    assert result.usage.output_tokens == 15
    assert result.structured is None and result.session_id is None

    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    body = sent.body
    assert body["model"] == "twin-model"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Say hello."},
    ]
    assert body["temperature"] == 0.2 and body["max_tokens"] == 64
    assert "tools" not in body and "response_format" not in body
    if stream:
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    else:
        assert "stream" not in body


def test_json_schema_gives_structured_answer(tmp_path: Path) -> None:
    answer = '{"verdict": "rework", "summary": "tests fail on empty input"}'
    with twin(Reply(text=answer)) as server:
        _, result = run(adapter(server.url + "/v1"), request(tmp_path, json_schema=VERDICT))
        sent = server.model_calls[0].body

    assert result.success, result.error
    assert result.structured == {"verdict": "rework", "summary": "tests fail on empty input"}
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": VERDICT},
    }


def test_strict_schema_option_and_title_as_name(tmp_path: Path) -> None:
    schema = {**VERDICT, "title": "Review feedback"}
    with twin(Reply(text='{"verdict": "pass", "summary": "ok"}')) as server:
        _, result = run(
            adapter(server.url + "/v1", strict_schema=True),
            request(tmp_path, json_schema=schema),
        )
        spec = server.model_calls[0].body["response_format"]["json_schema"]
    assert result.success, result.error
    assert spec["name"] == "Review_feedback" and spec["strict"] is True


def test_malformed_json_is_unparseable_output(tmp_path: Path) -> None:
    with twin(Reply(text='{"verdict": "pass", "summ')) as server:
        _, result = run(adapter(server.url + "/v1"), request(tmp_path, json_schema=VERDICT))
    assert not result.success
    assert result.error_kind == "unparseable_output"
    assert result.text == '{"verdict": "pass", "summ'


@pytest.mark.parametrize(
    ("reply", "kind", "words"),
    [
        (openai_chat.rate_limited(retry_after=2), "rate_limit", "retry after 2s"),
        (openai_chat.unauthorized(), "auth", "$OPENAI_API_KEY"),
        (openai_chat.context_length_exceeded(), "context_exhausted", "maximum context length"),
        (openai_chat.server_error(), "crash", "500"),
        (
            Reply(
                error=(
                    400,
                    {"error": {"code": 400, "type": "exceed_context_size_error", "message": "x"}},
                )
            ),
            "context_exhausted",
            "400",
        ),
        (
            Reply(error=(404, {"error": {"message": "model 'nope' not found"}})),
            "agent",
            "not found",
        ),
        (Reply(error=(503, {"error": {"message": "overloaded"}})), "rate_limit", "overloaded"),
    ],
    ids=["429", "401", "400-context", "500", "llama.cpp-context", "404", "503"],
)
def test_http_errors_are_classified(tmp_path: Path, reply: Reply, kind: str, words: str) -> None:
    with twin(reply) as server:
        _, result = run(adapter(server.url + "/v1"), request(tmp_path))
    assert not result.success
    assert result.error_kind == kind, result.error
    assert words in (result.error or "")


@pytest.mark.parametrize("stream", [True, False])
def test_garbage_is_unparseable_output(tmp_path: Path, stream: bool) -> None:
    with twin(Reply(garbage=b"\x00\xffnot json at all <html>")) as server:
        _, result = run(adapter(server.url + "/v1", stream=stream), request(tmp_path))
    assert result.error_kind == "unparseable_output", result.error


def test_error_inside_the_stream_is_classified(tmp_path: Path) -> None:
    chunk = b'data: {"error": {"message": "the prompt exceeds the context size"}}\n\n'
    with twin(Reply(garbage=chunk)) as server:
        _, result = run(adapter(server.url + "/v1"), request(tmp_path))
    assert result.error_kind == "context_exhausted", result.error


def test_stream_cut_short_is_a_crash(tmp_path: Path) -> None:
    chunk = b'data: {"choices": [{"index": 0, "delta": {"content": "half an ans"}}]}\n\n'
    with twin(Reply(garbage=chunk)) as server:
        _, result = run(adapter(server.url + "/v1"), request(tmp_path))
    assert result.error_kind == "crash"
    assert result.text == "half an ans"


def test_connection_refused_names_the_url(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    _, result = run(adapter(url), request(tmp_path))
    assert result.error_kind == "crash"
    assert f"cannot reach {url}" in (result.error or "")


def test_hanging_server_times_out(tmp_path: Path) -> None:
    with twin(Reply(hang=True)) as server:
        started = time.monotonic()
        _, result = run(adapter(server.url + "/v1"), request(tmp_path, timeout_s=0.5))
        elapsed = time.monotonic() - started
    assert result.error_kind == "timeout", result.error
    assert elapsed < 5


def test_no_model_is_a_clear_error_without_a_call(tmp_path: Path) -> None:
    with twin(Reply(text="unused")) as server:
        _, result = run(adapter(server.url + "/v1"), request(tmp_path, model=None))
        assert server.requests == []
    assert result.error_kind == "agent"
    assert "no model set" in (result.error or "")


def test_key_and_base_url_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MY_KEY", raising=False)
    with twin(Reply(text="a"), Reply(text="b")) as server:
        env = {"OPENAI_BASE_URL": server.url + "/v1/"}
        plain = OpenAIAdapter(AdapterSetup("openai"))
        assert plain.env_passthrough == ("OPENAI_API_KEY", "OPENAI_BASE_URL")
        _, first = run(plain, request(tmp_path, env=env))
        custom = OpenAIAdapter(
            AdapterSetup("openai", options={"api_key_env": "MY_KEY", "headers": {"X-Team": "a"}})
        )
        assert "MY_KEY" in custom.env_passthrough
        _, second = run(custom, request(tmp_path, env={**env, "MY_KEY": "sk-mine"}))
        calls = server.model_calls
    assert first.success and second.success
    assert "authorization" not in calls[0].headers  # local servers need no key
    assert calls[1].headers["authorization"] == "Bearer sk-mine"
    assert calls[1].headers["x-team"] == "a"
    assert calls[0].headers["user-agent"].startswith("swell/")


def test_twin_lists_models_and_rejects_bad_requests() -> None:
    with twin(Reply(text="unused")) as server:
        models = httpx.get(server.url + "/v1/models").json()
        no_model = httpx.post(server.url + "/v1/chat/completions", json={"messages": []})
        bad_format = httpx.post(
            server.url + "/v1/chat/completions",
            json={
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "response_format": {"type": "json_schema", "json_schema": {"schema": {}}},
            },
        )
        assert server.model_calls == []
    assert models["data"][0]["id"] == "twin-model"
    assert no_model.status_code == 400 and bad_format.status_code == 400
    assert "json_schema.name" in bad_format.json()["error"]["message"]


def test_options_are_checked() -> None:
    with pytest.raises(ValidationError):
        OpenAIAdapter(AdapterSetup("openai", options={"api_key": "sk-in-the-manifest"}))
    assert OpenAIAdapter.capabilities.json_schema and not OpenAIAdapter.capabilities.tools


def test_json_helpers() -> None:
    assert parse_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json(' {"a": [1]} ') == {"a": [1]}
    with pytest.raises(ValueError):
        parse_json("{")
    assert schema_name({"title": "!!"}) == "output"
