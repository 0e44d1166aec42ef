"""Inside a long-lived sandbox: start processes on swell's request (sandbox/boxes.py).

Started as `python -I -S -c SOURCE FD` (stdlib only: the sandbox's environment has no
PYTHONPATH). FD is a SOCK_SEQPACKET socket to swell. Each message is a JSON request:
- `{"argv", "cwd", "env"}` with four descriptors (the process's channel, its stdin,
  stdout, stderr): the child starts a session, sends its pid over its channel
  (SCM_CREDENTIALS: swell reads it in its own pid namespace) and execs; when it exits,
  its wait status goes back over the channel;
- `{"lane": true}` with two (a new control socket, a channel): a child of the server
  serves that socket as the server does. swell moves it into a visit's pids cgroup
  once, and every process it then starts is born there (moving each process would
  cost milliseconds: cgroup v1 migrates under an RCU-synchronised lock);
- `"clean": true` in a request: the visits that used the box are over: empty /tmp
  first (any server of the box can: they share it).
- `"proxy": PATH` in a request: the process reaches the network only through swell's
  egress proxy at PATH (a unix socket bound into the box): its child listens on a port of
  the box's loopback, relays each connection there to PATH, and HTTP(S)_PROXY name it.
The server is not dumpable, so no process in the box can trace it or take its sockets.

Started as `python -I -S -c SOURCE --forward PATH PORT -- ARGV...` (a process with a
bwrap of its own), it forwards 127.0.0.1:PORT to PATH and runs ARGV, exiting as it did.
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
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

PR_SET_DUMPABLE = 4


def _report(chan: socket.socket) -> None:
    creds = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())
    chan.sendmsg([b"p"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])


PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
        with contextlib.suppress(OSError):
            sock.shutdown(how)


def _relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve_proxy(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def _listen(port: int) -> socket.socket:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    return listener


def _forward_then_exit(listener: socket.socket, path: str, pid: int) -> None:
    """Relay `listener`'s connections to `path` until process `pid` exits; exit as it did."""
    threading.Thread(target=_serve_proxy, args=(listener, path), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _exec(chan: socket.socket, stdio: list[int], request: dict[str, Any]) -> None:
    os.setsid()
    _report(chan)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # as subprocess's restore_signals
        signal.signal(sig, signal.SIG_DFL)
    argv, env, proxy = request["argv"], request["env"], request.get("proxy")
    if proxy:  # this process forwards to the proxy; its child, in its group, runs argv
        listener = _listen(0)
        env.update(dict.fromkeys(PROXY_NAMES, f"http://127.0.0.1:{listener.getsockname()[1]}"))
        pid = os.fork()
        if pid:
            chan.close()
            for fd in stdio:
                os.close(fd)
            _forward_then_exit(listener, proxy, pid)
        listener.close()
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    try:
        os.chdir(request["cwd"])
        os.execvpe(argv[0], argv, env)
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
            _clean_tmp()
        wanted = 2 if request.get("lane") else 4
        if len(fds) != wanted:
            for fd in fds:
                os.close(fd)
            return True
        chan = socket.socket(fileno=fds[1] if wanted == 2 else fds[0])
        pid = os.fork()
        if pid == 0:
            try:
                if wanted == 2:
                    self.become(socket.socket(fileno=fds[0]), chan)
                else:
                    self.control.close()
                    _exec(chan, list(fds[1:]), request)
            finally:
                os._exit(127)
        for fd in fds:
            if fd != chan.fileno():
                os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pidfd] = (pid, chan)
        self.select.register(pidfd, selectors.EVENT_READ, pid)
        return True

    def become(self, control: socket.socket, chan: socket.socket) -> None:
        """In a new child: serve `control` (a lane), nothing of the server kept."""
        for pidfd, (_, other) in self.children.items():
            os.close(pidfd)
            other.close()
        self.select.close()
        self.control.close()
        _report(chan)
        chan.close()
        Server(control).serve()

    def reap(self, pidfd: int) -> None:
        self.select.unregister(pidfd)
        os.close(pidfd)
        pid, chan = self.children.pop(pidfd)
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(OSError):
            chan.send(b"x" + struct.pack("i", status))
        chan.close()


def forward(path: str, port: str, argv: list[str]) -> None:
    """Forward 127.0.0.1:`port` to `path` while `argv` runs; exit as it did."""
    listener = _listen(int(port))
    pid = os.fork()
    if pid == 0:
        listener.close()
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
            os._exit(127)
    _forward_then_exit(listener, path, pid)


def main() -> None:
    if sys.argv[1] == "--forward":
        path, port, sep, *argv = sys.argv[2:]
        assert sep == "--" and argv, "usage: --forward SOCKET PORT -- ARGV..."
        forward(path, port, argv)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    control = socket.socket(fileno=int(sys.argv[1]))
    control.set_inheritable(False)
    Server(control).serve()


if __name__ == "__main__":
    main()
