"""Long-lived sandboxes: one bwrap per (run, shape), reused by the visits of that shape.

Starting bwrap costs a process tens of milliseconds (its namespaces and mounts), so a
command step's process is not started as its own `bwrap ... -- argv`: the first process
of a shape starts a box, `bwrap [the shape's mounts] -- python boxserver.py FD`, and
every process of that shape (the same run, workspace, mounts, network) is then a fork
and exec of the server inside it (`Server.start`). The box dies with swell
(`--die-with-parent`), is closed after `IDLE` seconds unused, and at most `MOST` are
kept (docs/security.md, "One box per run and shape").
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from swell.sandbox.base import Box

# passed as `python -c` text: the source tree may sit under /tmp, which the box replaces
SERVER = Path(__file__).with_name("boxserver.py").read_text(encoding="utf-8")
# swell's own Python, run with -I -S: the stdlib is all the server needs
PYTHON_ARGS = (os.path.realpath(sys.executable), "-I", "-S", "-c")
IDLE = 60.0  # seconds a box is kept unused
MOST = 8  # boxes kept at once (the least recently used idle one goes first)
ANSWER = 30.0  # seconds the server may take to fork a process
BIGGEST = 1 << 20  # the largest request (argv and env) a box is sent; else per process

Key = tuple[object, ...]


def key_of(binary: str, box: Box, run: str) -> Key:
    """What decides a box's mounts and network: two processes with the same key may share
    one (the environment is each process's own, sent with it)."""
    return (
        binary, run, box.writable, box.home, box.hidden, box.visible, box.readonly,
        box.network, box.proxy, box.tmp_size, box.logins,
    )  # fmt: skip


class Boxed:
    """A process started in a box: its pid as swell sees it (its session and process
    group too), its exit status read from its channel."""

    def __init__(self, pid: int, chan: socket.socket) -> None:
        self.pid = pid
        self.chan = chan
        self.code: int | None = None

    def exit_fd(self) -> int:
        """A descriptor readable once the process has exited (close it after)."""
        return os.dup(self.chan.fileno())

    def wait(self) -> int:
        """The exit code (as `Popen.returncode`: -N for signal N); call once it exited."""
        if self.code is None:
            self.chan.settimeout(ANSWER)
            try:
                data = self.chan.recv(16)
            except OSError:
                data = b""
            self.chan.close()
            if len(data) == 5 and data[:1] == b"x":
                self.code = os.waitstatus_to_exitcode(struct.unpack("i", data[1:])[0])
            else:  # the box went down with it
                self.code = -signal.SIGKILL
        return self.code


class Server:
    """One box: bwrap running the process server, and the socket to it."""

    def __init__(self, key: Key, argv: Callable[[str], list[str]], env: Mapping[str, str]) -> None:
        """`argv(fd)`: the bwrap argv that runs the server with its socket at `fd`;
        `env`: bwrap's own (the run's marker, so `swell stop` finds the box)."""
        self.key = key
        self.control, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            fd = str(inner.fileno())
            self.proc = subprocess.Popen(
                argv(fd),
                pass_fds=(inner.fileno(),),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            inner.close()
        self.users = 0  # visits using it now
        self.used = time.monotonic()
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def start(
        self,
        argv: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        stdio: tuple[int, int, int],
        join: Callable[[int], None],
    ) -> Boxed | None:
        """Start `argv` in the box with `stdio` (stdin, stdout, stderr); `join(pid)` runs
        before it execs (its pids cgroup). None when the box cannot (it is gone)."""
        payload = json.dumps({"argv": list(argv), "cwd": cwd, "env": dict(env)}).encode()
        if len(payload) > BIGGEST:
            return None
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        fds = array.array("i", [theirs.fileno(), *stdio])
        try:
            with self.lock:
                self.control.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            theirs.close()
            mine.settimeout(ANSWER)
            pid = _pid_of(mine)
            if pid is None:
                mine.close()
                return None
            join(pid)
            mine.sendall(b"g")
        except OSError:
            theirs.close()
            mine.close()  # the child, if any, gets no go and exits
            return None
        self.used = time.monotonic()
        return Boxed(pid, mine)

    def clean(self) -> None:
        """A visit is over: the server empties /tmp once none of its processes runs."""
        with contextlib.suppress(OSError), self.lock:
            self.control.send(b'{"clean": true}')

    def close(self) -> None:
        self.control.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def _pid_of(chan: socket.socket) -> int | None:
    size = socket.CMSG_SPACE(struct.calcsize("3i"))
    msg, ancillary, _, _ = chan.recvmsg(1, size)
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and msg == b"p":
            pid: int = struct.unpack("3i", data[: struct.calcsize("3i")])[0]
            return pid
    return None


_servers: dict[Key, Server] = {}
_lock = threading.Lock()


def server_for(key: Key, argv: Callable[[str], list[str]], run: str) -> Server:
    """The live box of `key`, started if there is none (idle boxes past IDLE, or past
    MOST, are closed)."""
    with _lock:
        found = _servers.get(key)
        if found is not None and not found.alive():
            del _servers[key]
            found.close()
            found = None
        if found is None:
            _retire(time.monotonic())
            env = {"SWELL_RUN_ID": run} if run else {}
            found = _servers[key] = Server(key, argv, env)
        found.users += 1
        return found


def release(server: Server) -> None:
    """A visit that used `server` is over."""
    with _lock:
        server.users -= 1
        server.used = time.monotonic()
    server.clean()


def _retire(now: float) -> None:
    idle = sorted(((s.used, k) for k, s in _servers.items() if s.users <= 0), key=_first)
    for n, (used, key) in enumerate(idle):
        if now - used > IDLE or len(_servers) - n >= MOST:
            _servers.pop(key).close()


def _first(pair: tuple[float, Key]) -> float:
    return pair[0]


def close_all() -> None:
    """Close every box (swell exits; `--die-with-parent` would end them anyway)."""
    with _lock:
        while _servers:
            _servers.popitem()[1].close()


atexit.register(close_all)
