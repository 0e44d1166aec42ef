"""A stand-in notification receiver on 127.0.0.1: records each POSTed JSON body;
answers 500 to the first `fail` requests; holds every request while `hold` is set."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.bodies: list[dict[str, Any]] = []
        self.answered: list[int] = []
        self.raw: list[tuple[bytes, dict[str, str]]] = []  # each body as sent, its headers
        self.at: list[float] = []  # when each request came (time.monotonic)
        self.release = threading.Event()
        self.release.set()
        self.lock = threading.Lock()
        self.url = ""

    def hold(self) -> None:
        self.release.clear()

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [b for b in self.bodies if b["type"] == kind]


@contextmanager
def receiver(fail: int = 0) -> Iterator[Receiver]:
    state = Receiver(fail)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            body = json.loads(raw)
            with state.lock:
                state.at.append(time.monotonic())
                state.raw.append((raw, {k.lower(): v for k, v in self.headers.items()}))
                state.bodies.append(body)
                status = 500 if len(state.bodies) <= state.fail else 200
                state.answered.append(status)
            state.release.wait(120)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
