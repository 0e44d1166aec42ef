"""Long-lived sandboxes: one bwrap per (run, shape), reused by the visits of that shape.

Starting bwrap costs a process tens of milliseconds (its namespaces and mounts), so a
visit's process (a command's, an agent CLI's) is not started as its own `bwrap ... -- argv`: the first process
of a shape starts a box, `bwrap [the shape's mounts] -- python boxserver.py FD`, and
every process of that shape (the same run, workspace, mounts, network) is then a fork
and exec of the server inside it (`Server.start`). The box dies with swell
(`--die-with-parent`), is closed after `IDLE` seconds unused, and at most `MOST` are
kept (docs/security.md, "One box per run and shape").
"""

from __future__ import annotations

import array
import asyncio
import atexit
import contextlib
import marshal
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

from swell.sandbox import logins
from swell.sandbox.base import Box
from swell.sandbox.limits import PidsCgroup

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
    egress = None if box.proxy is None else box.proxy.parent  # each visit's socket in it
    return (
        binary, run, box.writable, box.home, box.hidden, box.visible, box.readonly,
        box.network, egress, box.tmp_size, box.logins, box.rewritable,
    )  # fmt: skip


# the pid of a process that ended before it said its pid: signalling it finds nothing
# (above any pid_max), where 0 or -1 would signal swell's group or everything
NO_PID = 1 << 30
_CREDS = struct.calcsize("3i")


class Boxed:
    """A process started in a box: its pid as swell sees it (its session and process
    group too), read from its channel when first wanted; its exit status, which the
    server sends over the same channel."""

    def __init__(self, chan: socket.socket) -> None:
        self.chan = chan
        self._pid: int | None = None
        self.code: int | None = None

    @property
    def pid(self) -> int:
        while self._pid is None and self.code is None:
            self._take(ANSWER)
        return NO_PID if self._pid is None else self._pid

    def exit_fd(self) -> int:
        """A descriptor readable when there is news (see `poll`); close it after."""
        return os.dup(self.chan.fileno())

    def poll(self) -> int | None:
        """The exit code once the process has exited, else None (reads what came)."""
        while self.code is None and self._take(0.0):
            pass
        return self.code

    def wait(self) -> int:
        """The exit code (as `Popen.returncode`: -N for signal N)."""
        while self.code is None:
            self._take(ANSWER)
        with contextlib.suppress(OSError):
            self.chan.close()
        return self.code

    def _take(self, timeout: float) -> bool:
        """Read one message (its pid, or its exit status); False when none came."""
        self.chan.settimeout(timeout)
        try:
            msg, ancillary, _, _ = self.chan.recvmsg(16, socket.CMSG_SPACE(_CREDS))
        except (BlockingIOError, TimeoutError):
            if timeout == 0.0:
                return False
            msg = b""
        except OSError:
            msg = b""
        if msg == b"p":
            self._pid = _creds_pid(ancillary)
        elif len(msg) == 5 and msg[:1] == b"x":
            self.code = os.waitstatus_to_exitcode(struct.unpack("i", msg[1:])[0])
        else:  # the box went down with it
            self.code = -signal.SIGKILL
        return True


def _creds_pid(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid: int = struct.unpack("3i", data[:_CREDS])[0]
            return pid
    return None


def _channel() -> tuple[socket.socket, socket.socket]:
    """(swell's end, the box's end) of a process's channel."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    return mine, theirs


class Spawner:
    """A server in a box (the box's own, or a lane's), reached over `control`."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.lock = threading.Lock()

    def send(self, request: dict[str, object], fds: Sequence[int]) -> None:
        payload = marshal.dumps(request)
        if len(payload) > BIGGEST:
            raise OSError(f"a request of {len(payload)} bytes")
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        with self.lock:
            self.control.sendmsg([payload], rights if fds else [])

    def start(
        self,
        argv: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        stdio: tuple[int, int, int],
        clean: bool = False,
        proxy: str | None = None,
    ) -> Boxed | None:
        """Start `argv` with `stdio` (stdin, stdout, stderr), after emptying the box's
        /tmp if `clean`, behind a forwarder to the egress proxy at `proxy` (inside the
        box) if given; None when the box cannot (it is gone, or the request is too big)."""
        mine, theirs = _channel()
        request = {"argv": list(argv), "cwd": cwd, "env": dict(env), "clean": clean}
        if proxy is not None:
            request["proxy"] = proxy
        try:
            self.send(request, [theirs.fileno(), *stdio])
        except OSError:
            mine.close()
            return None
        finally:
            theirs.close()
        return Boxed(mine)


class Lane(Spawner):
    """A server's child moved into a visit's pids cgroup: what it starts is born there.
    Kept for the next visit of the box once its visit is over."""

    def __init__(self, control: socket.socket, chan: socket.socket, cgroup: PidsCgroup) -> None:
        super().__init__(control)
        self.chan = chan  # readable once it has exited
        self.proc = Boxed(chan)
        self.cgroup = cgroup
        self.joined = False  # in its cgroup (see `ready`)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ready(self) -> bool:
        """Whether it is in its cgroup, moved there first if it is not (waiting for the
        box to say its pid): it starts nothing before its first request."""
        if not self.joined:
            try:
                self.cgroup.reserve(1)  # the lane's own server counts
                self.cgroup.join(self.proc.pid)
            except OSError:
                return False
            self.joined = True
        return True

    def discard(self) -> None:
        """End it and what runs in its cgroup; the cgroup goes back to the pool."""
        self.control.close()
        self.cgroup.give_back()
        self.proc.chan.close()


class Server(Spawner):
    """One box: bwrap running the process server, and the socket to it."""

    def __init__(
        self,
        key: Key,
        argv: Callable[[str], list[str]],
        env: Mapping[str, str],
        marks: tuple[Path, ...] = (),
    ) -> None:
        """`argv(fd)`: the bwrap argv that runs the server with its socket at `fd`;
        `env`: bwrap's own (the run's marker, so `swell stop` finds the box); `marks`:
        the login files it binds (their empty mount points go with it: logins.hold)."""
        control, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        super().__init__(control)
        self.marks = marks
        logins.hold(marks)
        # started from the thread that runs the run's visits (its event loop): bwrap's
        # --die-with-parent follows that thread, which outlives them
        self.key = key
        try:
            self.proc = subprocess.Popen(
                argv(str(inner.fileno())),
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
        self.lanes: list[Lane] = []  # idle ones
        self.dirty = False  # see `take_dirty`

    def alive(self) -> bool:
        return self.proc.poll() is None

    def lane(self, cgroup: Callable[[], PidsCgroup]) -> Lane | None:
        """An idle lane, or a new one in `cgroup()`; None when the box cannot."""
        while self.lanes:
            found = self.lanes.pop()
            if found.alive() and found.ready():
                return found
            found.discard()
        made = self._new_lane(cgroup)
        if made is not None and not made.ready():
            made.discard()
            return None
        return made

    def prepare_lane(self, cgroup: Callable[[], PidsCgroup]) -> Lane | None:
        """Ask for a lane for the next visit, without waiting for the box to start."""
        made = self._new_lane(cgroup)
        if made is not None:
            self.lanes.append(made)
        return made

    def ready_lane(self, lane: Lane) -> None:
        """Wait for the box to start and move `lane` into its cgroup (off the event loop:
        a cgroup v1 move waits for an RCU grace period), or drop it if it cannot be."""
        if lane.alive() and lane.ready():
            return
        with contextlib.suppress(ValueError):
            self.lanes.remove(lane)
        lane.discard()

    def _new_lane(self, cgroup: Callable[[], PidsCgroup]) -> Lane | None:
        control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        mine, their_chan = _channel()
        try:
            self.send({"lane": True}, [theirs.fileno(), their_chan.fileno()])
            return Lane(control, mine, cgroup())
        except OSError:
            control.close()
            mine.close()
            return None
        finally:
            theirs.close()
            their_chan.close()

    def give_back(self, lane: Lane) -> None:
        """Its visit is over: end what the visit left in it; keep it for the next one."""
        if lane.alive() and not lane.cgroup.reached():
            lane.cgroup.kill(but=lane.proc.pid)
            lane.cgroup.rearm()
            self.lanes.append(lane)
        else:
            lane.discard()

    def take_dirty(self) -> bool:
        """Whether the next process must find /tmp empty (the visits that used the box
        are over; emptied then, not at their end: one message less per visit)."""
        with _lock:
            dirty, self.dirty = self.dirty, False
        return dirty

    def close(self) -> None:
        for lane in self.lanes:
            lane.discard()
        self.control.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        logins.release(self.marks)


_servers: dict[Key, Server] = {}
_lock = threading.Lock()


def server_for(
    key: Key, argv: Callable[[str], list[str]], run: str, marks: tuple[Path, ...] = ()
) -> Server:
    """The live box of `key`, started if there is none (idle boxes past IDLE, or past
    MOST, are closed); `marks`: see `Server`."""
    with _lock:
        found = _servers.get(key)
        if found is not None and not found.alive():
            del _servers[key]
            found.close()
            found = None
        if found is None:
            _retire(time.monotonic())
            env = {"SWELL_RUN_ID": run} if run else {}
            found = _servers[key] = Server(key, argv, env, marks)
        found.users += 1
        return found


def release(server: Server) -> None:
    """A visit that used `server` is over."""
    with _lock:
        server.users -= 1
        server.used = time.monotonic()
        if server.users <= 0:
            server.dirty = True
    with contextlib.suppress(RuntimeError):  # outside an event loop: at the next box
        asyncio.get_running_loop().call_later(IDLE + 1, _retire_idle)


def _retire_idle() -> None:
    with _lock:
        _retire(time.monotonic())


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
