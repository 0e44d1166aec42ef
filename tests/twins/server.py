"""The twin's HTTP server, its script of replies, and the record of requests."""

from __future__ import annotations

import importlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ToolCall:
    """A tool the scripted model asks the agent to call."""

    name: str
    input: dict[str, Any]
    id: str | None = None


@dataclass
class Reply:
    """What the scripted model answers to one model call."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    # Anthropic-style names; protocols map them onto their own usage fields
    usage: dict[str, int] = field(
        default_factory=lambda: {"input_tokens": 100, "output_tokens": 20}
    )
    error: tuple[int, dict[str, Any]] | None = None  # HTTP status and JSON body
    headers: dict[str, str] = field(
        default_factory=dict
    )  # extra response headers (retry-after, ...)
    delay: float = 0.0  # seconds before answering
    hang: bool = False  # never answer (timeout tests)
    garbage: bytes | None = None  # raw bytes instead of a valid response


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON
    model_call: bool = False  # whether a Reply was consumed for it


@dataclass
class Request:
    """What a protocol handler gets: the parsed request and a way to answer."""

    twin: Twin
    handler: BaseHTTPRequestHandler
    method: str
    path: str
    match: re.Match[str]
    body: Any
    record: Recorded

    def send_json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.handler.send_response(status)
        self.handler.send_header("Content-Type", "application/json")
        self.handler.send_header("Content-Length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.handler.send_header(key, value)
        self.handler.end_headers()
        self.handler.wfile.write(raw)

    def send_raw(self, status: int, raw: bytes, content_type: str = "application/json") -> None:
        self.handler.send_response(status)
        self.handler.send_header("Content-Type", content_type)
        self.handler.send_header("Content-Length", str(len(raw)))
        self.handler.end_headers()
        self.handler.wfile.write(raw)

    def start_sse(self, headers: dict[str, str] | None = None) -> None:
        self.handler.send_response(200)
        self.handler.send_header("Content-Type", "text/event-stream")
        self.handler.send_header("Cache-Control", "no-cache")
        for key, value in (headers or {}).items():
            self.handler.send_header(key, value)
        self.handler.end_headers()

    def sse(self, data: Any, event: str | None = None) -> None:
        """One server-sent event (the connection closes when the handler returns)."""
        chunk = (
            f"event: {event}\n" if event else ""
        ) + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        self.handler.wfile.write(chunk.encode())
        self.handler.wfile.flush()

    def reply(self) -> Reply:
        """Consume the next scripted reply for this model call."""
        return self.twin.next_reply(self)


Handler = Callable[[Request], None]
Route = tuple[str, str, Handler]  # method, path regex, handler


class Twin:
    """A fake model server on 127.0.0.1. Use as a context manager.

    `replies` is a list (the n-th model call gets the n-th reply; when the list runs
    out, further calls get `fallback`) or a function choosing a reply per request.
    """

    def __init__(
        self,
        replies: list[Reply] | Callable[[Request], Reply],
        protocols: tuple[str, ...],
        fallback: Reply | None = None,
    ) -> None:
        self._replies = replies
        self._index = 0
        self._lock = threading.Lock()
        self.fallback = fallback or Reply(text="(twin: no more scripted replies)")
        self.requests: list[Recorded] = []
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        for name in protocols:
            module = importlib.import_module(f"twins.{name}")
            for method, pattern, handler in module.ROUTES:
                self.routes.append((method, re.compile(pattern), handler))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Twin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def model_calls(self) -> list[Recorded]:
        return [r for r in self.requests if r.model_call]

    def next_reply(self, request: Request) -> Reply:
        with self._lock:
            request.record.model_call = True
            if callable(self._replies):
                return self._replies(request)
            if self._index < len(self._replies):
                reply = self._replies[self._index]
                self._index += 1
                return reply
            return self.fallback

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        twin = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection; streams end at close

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _dispatch(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                path = self.path.split("?", 1)[0]
                record = Recorded(
                    method, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                with twin._lock:
                    twin.requests.append(record)
                for route_method, pattern, handler in twin.routes:
                    match = pattern.fullmatch(path)
                    if route_method == method and match:
                        handler(Request(twin, self, method, path, match, body, record))
                        return
                request = Request(twin, self, method, path, re.match("", ""), body, record)  # type: ignore[arg-type]
                request.send_json(
                    404,
                    {"error": {"type": "not_found", "message": f"twin: no route {method} {path}"}},
                )

            def do_GET(self) -> None:
                self._dispatch("GET")

            def do_POST(self) -> None:
                self._dispatch("POST")

            def do_HEAD(self) -> None:
                self._dispatch("HEAD")

        return _Handler


def apply_delay(reply: Reply) -> bool:
    """Sleep as scripted; False when the reply hangs (the handler should just return)."""
    if reply.hang:
        time.sleep(3600)
        return False
    if reply.delay:
        time.sleep(reply.delay)
    return True


def words(text: str, size: int = 12) -> Iterator[str]:
    """Split text into small chunks, as a streaming model would send them."""
    for start in range(0, len(text), size):
        yield text[start : start + size]
