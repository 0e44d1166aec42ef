"""Inside a long-lived sandbox: start processes on swell's request (sandbox/boxes.py).

Started as `python -I -S -c SOURCE FD` (stdlib only: the sandbox's environment has no
PYTHONPATH). FD is a SOCK_SEQPACKET socket to swell. Each message is a JSON request:
`{"argv", "cwd", "env"}` with four descriptors (the process's channel, its stdin, stdout,
stderr), or `{"clean": true}` (a visit is over: empty /tmp once no process runs). For a
process, the child starts a session, sends its pid over its channel (SCM_CREDENTIALS:
swell reads it in its own pid namespace), waits for swell's go (swell has moved it into
its visit's pids cgroup), then execs; when it exits its wait status goes back over the
channel. The server is not dumpable, so no process in the box can trace it or take its
socket.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import json
import os
import selectors
import signal
import socket
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

PR_SET_DUMPABLE = 4


def _exec(chan: socket.socket, stdio: list[int], request: dict[str, Any]) -> None:
    os.setsid()
    creds = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())
    chan.sendmsg([b"p"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])
    if chan.recv(1) != b"g":
        return
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # as subprocess's restore_signals
        signal.signal(sig, signal.SIG_DFL)
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    argv = request["argv"]
    try:
        os.chdir(request["cwd"])
        os.execvpe(argv[0], argv, request["env"])
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())


def _empty(path: str, dev: int) -> None:
    """Remove what `path` holds on the tmpfs `dev`, never crossing into a mount (the
    workspace and the project, bound over places under /tmp, are kept whole)."""
    with os.scandir(path) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_dev != dev:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    _empty(entry.path, dev)
                    os.rmdir(entry.path)  # fails where a mount lies below: kept
                else:
                    os.unlink(entry.path)


def _clean_tmp() -> None:
    with contextlib.suppress(OSError):
        _empty("/tmp", os.stat("/tmp").st_dev)


class Server:
    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.select = selectors.DefaultSelector()
        self.select.register(control, selectors.EVENT_READ, None)
        self.children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, channel)
        self.clean = False  # asked to empty /tmp once no process runs

    def serve(self) -> None:
        while True:
            for key, _ in self.select.select():
                if key.data is None:
                    if not self.request():
                        return
                else:
                    self.reap(key.fd)

    def request(self) -> bool:
        fds = array.array("i")
        size = socket.CMSG_SPACE(4 * fds.itemsize)
        msg, ancillary, _, _ = self.control.recvmsg(1 << 20, size, socket.MSG_CMSG_CLOEXEC)
        if not msg:
            return False  # swell closed the box
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        request = json.loads(msg)
        if request.get("clean"):
            self.clean = True
            self.tidy()
            return True
        if self.clean and not self.children:
            self.tidy()
        self.clean = False
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            return True
        chan = socket.socket(fileno=fds[0])
        pid = os.fork()
        if pid == 0:
            try:
                self.control.close()
                _exec(chan, list(fds[1:]), request)
            finally:
                os._exit(127)
        for fd in fds[1:]:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pidfd] = (pid, chan)
        self.select.register(pidfd, selectors.EVENT_READ, pid)
        return True

    def reap(self, pidfd: int) -> None:
        self.select.unregister(pidfd)
        os.close(pidfd)
        pid, chan = self.children.pop(pidfd)
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            chan.send(b"x" + struct.pack("i", status))
        chan.close()
        self.tidy()

    def tidy(self) -> None:
        if self.clean and not self.children:
            self.clean = False
            _clean_tmp()


def main() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)
    Server(control).serve()


if __name__ == "__main__":
    main()
