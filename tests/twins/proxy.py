"""A proxy that answers nothing: point an agent CLI's HTTP(S)_PROXY at it to prove
the CLI talks to nothing but the twin on 127.0.0.1."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest


class DeadProxy:
    """Accepts connections, records each request line, and answers nothing."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Wake the thread's accept, wait for it, then free the socket. Closed under a
        thread still accepting on it, its descriptor went to the next socket opened (a
        twin's), whose connections the thread then took and dropped: "fetch failed",
        and a twin that never shut down."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(timeout=5)
        self.sock.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.seen.append(conn.recv(4096).split(b"\r\n")[0].decode(errors="replace"))


@pytest.fixture
def proxy() -> Iterator[DeadProxy]:
    """A dead proxy; the test fails if anything tried to go through it."""
    dead = DeadProxy()
    yield dead
    dead.close()
    assert dead.seen == [], f"the CLI tried to reach the internet: {dead.seen}"
