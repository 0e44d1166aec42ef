"""The egress proxy of a sandbox without network: HTTP CONNECT and plain HTTP, on a unix
socket bound into the sandbox, letting through exactly the allowed hosts.

A host is allowed when it is one of `allowed_domains` (exact, or `*.suffix`: any host
ending in `.suffix`, as Wave matches) and within the `ceiling` (if any), or one the
visit added (an adapter's model endpoint). Every connection asked for is reported to `record(host, port, allowed)`, from
the proxy's thread.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

Record = Callable[[str, int, bool], None]
MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT = 30.0
POLL = 0.05  # seconds between the serving loop's looks at a shutdown request


def matches(host: str, patterns: Iterable[str]) -> bool:
    """Whether `host` is one of `patterns` (exact, or `*.suffix`)."""
    host = host.lower().rstrip(".")
    for pattern in patterns:
        pattern = pattern.lower().rstrip(".")
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False


def _target(line: str) -> tuple[str, str, int, str] | None:
    """(method, host, port, origin-form path) of a request line, or None."""
    parts = line.split()
    if len(parts) != 3:
        return None
    method, where, _ = parts
    if method == "CONNECT":
        host, _, port = where.rpartition(":")
        return (method, host.strip("[]"), int(port), "") if port.isdigit() else None
    url = urlsplit(where)
    if url.scheme != "http" or not url.hostname:
        return None
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    return method, url.hostname, url.port or 80, path


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
        with contextlib.suppress(OSError):
            sock.shutdown(how)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        head = b""
        while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
            data = client.recv(65536)
            if not data:
                return
            head += data
        raw, _, rest = head.partition(b"\r\n\r\n")
        line, *headers = raw.decode("latin-1").split("\r\n")
        target = _target(line)
        if target is None:
            client.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
            return
        method, host, port, path = target
        allowed = self.server.allows(host)
        self.server.record(host, port, allowed)
        if not allowed:
            body = f"swell sandbox: {host} is not in allowed_domains\n".encode()
            client.sendall(
                b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            return
        try:
            upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            client.sendall(f"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n{exc}\n".encode())
            return
        upstream.settimeout(None)
        with upstream:
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                kept = [h for h in headers if not h.lower().startswith("proxy-")]
                upstream.sendall(f"{method} {path} HTTP/1.1\r\n".encode("latin-1"))
                upstream.sendall("\r\n".join(kept).encode("latin-1") + b"\r\n\r\n")
            if rest:
                upstream.sendall(rest)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allows: Callable[[str], bool]
    record: Record


class EgressProxy:
    """A proxy on a unix socket of its own (`path`), serving in a thread until `close`."""

    def __init__(
        self,
        allowed_domains: Iterable[str],
        record: Record,
        ceiling: Iterable[str] | None = None,
        directory: Path | None = None,
    ) -> None:
        """`ceiling`: hosts no pattern may go beyond (the runtime's list, which a
        persona's only narrows); None: none. `directory`: where its socket goes (see
        `egress_directory`), else a directory of its own."""
        self.patterns = list(allowed_domains)
        self.ceiling = None if ceiling is None else list(ceiling)
        self.hosts: set[str] = set()  # added by the visit: an adapter's model endpoint
        self._dir = str(socket_directory()) if directory is None else None
        self.path = Path(self._dir) / "proxy.sock" if self._dir else _socket_in(directory)
        self._server = _Server(str(self.path), _Handler)
        self._server.allows = self.allows
        self._server.record = record
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(POLL,), name="swell-egress", daemon=True
        )
        self._thread.start()

    def allows(self, host: str) -> bool:
        if host.lower() in self.hosts:
            return True
        within = self.ceiling is None or matches(host, self.ceiling)
        return within and matches(host, self.patterns)

    def allow_url(self, url: str) -> None:
        """Let the host of `url` through (an adapter's base URL)."""
        host = urlsplit(url).hostname
        if host:
            self.hosts.add(host.lower())

    def close(self) -> None:
        """Stop serving, without waiting here: `shutdown` waits for the serving loop's
        next poll, and this is called on swell's event loop at the end of each visit."""
        threading.Thread(target=self._stop, name="swell-egress-stop", daemon=True).start()

    def _stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
            if self._dir:
                os.rmdir(self._dir)


_dirs: dict[tuple[object, ...], Path] = {}
_made = itertools.count(1)


def egress_directory(key: tuple[object, ...]) -> Path:
    """The directory of the proxies' sockets of `key` (a run and its allow-list): one
    long-lived box of the run is bound to it, and each visit's proxy puts its socket
    there (removed with swell: `atexit`)."""
    found = _dirs.get(key)
    if found is None or not found.is_dir():
        if not _dirs:
            atexit.register(_remove_dirs)
        found = _dirs[key] = socket_directory()
    return found


def socket_directory() -> Path:
    """A new directory for proxy sockets: under TMPDIR unless a socket's path there could
    pass AF_UNIX's 107 bytes (a deep TMPDIR), then under /tmp."""
    base = tempfile.gettempdir()
    if len(base) > 64:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="swell-egress-", dir=base))


def _socket_in(where: Path | None) -> Path:
    assert where is not None
    return where / f"{next(_made)}.sock"


def _remove_dirs() -> None:
    for found in _dirs.values():
        shutil.rmtree(found, ignore_errors=True)
