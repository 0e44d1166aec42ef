"""Inside a long-lived sandbox: start processes on swell's request (sandbox/boxes.py).

Started as `python -I -S -c SOURCE FD` (no PYTHONPATH in the sandbox's environment). It
imports only modules built into the interpreter or loaded at its start (`posix`,
`_socket`, `select`, `marshal`, `_thread`, `_signal`, `_ctypes`): a box's first process
waits for this server to start, and `os`, `socket`, `json`, `selectors`, `threading`
and `ctypes` would double its start-up (docs/performance.md, "Sandbox"). FD is a
SOCK_SEQPACKET socket to swell. Each message is a request, a `marshal`led dict:
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

# ruff: noqa: SIM105  (try/except/pass: `contextlib` would cost the start-up)
from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (`signal` imports `enum`)
import _socket
import _thread
import marshal
import posix
import select
import sys

TYPE_CHECKING = False  # (the `typing` module is not imported at run time)
if TYPE_CHECKING:
    from typing import Any

    Request = dict[str, Any]
    Socket = _socket.socket

PR_SET_DUMPABLE = 4
PROXY_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
INT = 4  # bytes of a C int (pids, descriptors, a wait status)
ORDER = sys.byteorder


def _ints(*values: int) -> bytes:
    return b"".join(v.to_bytes(INT, ORDER, signed=True) for v in values)


def _report(chan: Socket) -> None:
    creds = _ints(posix.getpid(), posix.getuid(), posix.getgid())
    chan.sendmsg([b"p"], [(_socket.SOL_SOCKET, _socket.SCM_CREDENTIALS, creds)])


def _pump(src: Socket, dst: Socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for sock, how in ((dst, _socket.SHUT_WR), (src, _socket.SHUT_RD)):
        try:
            sock.shutdown(how)
        except OSError:
            pass


def _relay(client: Socket, path: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    done = _thread.allocate_lock()
    done.acquire()

    def back() -> None:
        _pump(upstream, client)
        done.release()

    _thread.start_new_thread(back, ())
    _pump(client, upstream)
    done.acquire()
    client.close()
    upstream.close()


def _serve_proxy(listener: Socket, path: str) -> None:
    while True:
        fd, _ = listener._accept()  # type: ignore[attr-defined]  # (`socket.accept`'s own)
        client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
        _thread.start_new_thread(_relay, (client, path))


def _listen(port: int) -> Socket:
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    return listener


def _forward_then_exit(listener: Socket, path: str, pid: int) -> None:
    """Relay `listener`'s connections to `path` until process `pid` exits; exit as it did."""
    _thread.start_new_thread(_serve_proxy, (listener, path))
    _, status = posix.waitpid(pid, 0)
    if posix.WIFSIGNALED(status):
        _signal.signal(posix.WTERMSIG(status), _signal.SIG_DFL)
        posix.kill(posix.getpid(), posix.WTERMSIG(status))
    posix._exit(posix.waitstatus_to_exitcode(status) & 0xFF)


def _execvpe(argv: list[str], env: dict[str, str]) -> None:
    """`argv[0]` looked up on the PATH of `env` (as `os.execvpe`), run with `env`."""
    name = argv[0]
    if "/" in name:
        posix.execve(name, argv, env)
    failed = None
    for where in env.get("PATH", "/bin:/usr/bin").split(":"):
        try:
            posix.execve(f"{where or '.'}/{name}", argv, env)
        except OSError as exc:
            if failed is None or failed.errno == 2:  # ENOENT: a later one says more
                failed = exc
    raise failed or FileNotFoundError(2, "No such file or directory")


def _exec(chan: Socket, stdio: list[int], request: Request) -> None:
    posix.setsid()
    _report(chan)
    for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):  # as subprocess's restore_signals
        _signal.signal(sig, _signal.SIG_DFL)
    argv, env, proxy = request["argv"], request["env"], request.get("proxy")
    if proxy:  # this process forwards to the proxy; its child, in its group, runs argv
        listener = _listen(0)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        env.update({name: url for name in PROXY_NAMES})
        pid = posix.fork()
        if pid:
            chan.close()
            for fd in stdio:
                posix.close(fd)
            _forward_then_exit(listener, proxy, pid)
        listener.close()
    for target, fd in enumerate(stdio):
        posix.dup2(fd, target)
    try:
        posix.chdir(request["cwd"])
        _execvpe(argv, env)
    except OSError as exc:
        posix.write(2, f"{argv[0]}: {exc.strerror}\n".encode())


def _empty(path: str, dev: int) -> None:
    """Remove what `path` holds on the tmpfs `dev`, never crossing into a mount (the
    workspace and the project, bound over places under /tmp, are kept whole)."""
    with posix.scandir(path) as entries:
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_dev != dev:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    _empty(entry.path, dev)
                    posix.rmdir(entry.path)  # fails where a mount lies below: kept
                else:
                    posix.unlink(entry.path)
            except OSError:
                pass


def _clean_tmp() -> None:
    try:
        _empty("/tmp", posix.stat("/tmp").st_dev)
    except OSError:
        pass


def _unix(fd: int) -> Socket:
    return _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, fd)


def _fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    found: list[int] = []
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            found += [
                int.from_bytes(data[i : i + INT], ORDER) for i in range(0, len(data) - 3, INT)
            ]
    return found


class Server:
    def __init__(self, control: Socket) -> None:
        self.control = control
        self.poll = select.epoll()
        self.poll.register(control.fileno(), select.EPOLLIN)
        self.children: dict[int, tuple[int, Socket]] = {}  # pidfd -> (pid, channel)

    def serve(self) -> None:
        while True:
            for fd, _ in self.poll.poll():
                if fd == self.control.fileno():
                    if not self.request():
                        return
                else:
                    self.reap(fd)

    def request(self) -> bool:
        size = _socket.CMSG_SPACE(4 * INT)
        msg, ancillary, _, _ = self.control.recvmsg(1 << 20, size, _socket.MSG_CMSG_CLOEXEC)
        if not msg:
            return False  # swell closed the box
        fds = _fds(ancillary)
        request: Request = marshal.loads(msg)
        if request.get("clean"):
            _clean_tmp()
        wanted = 2 if request.get("lane") else 4
        if len(fds) != wanted:
            for fd in fds:
                posix.close(fd)
            return True
        chan = _unix(fds[1] if wanted == 2 else fds[0])
        pid = posix.fork()
        if pid == 0:
            try:
                if wanted == 2:
                    self.become(_unix(fds[0]), chan)
                else:
                    self.control.close()
                    _exec(chan, fds[1:], request)
            finally:
                posix._exit(127)
        for fd in fds:
            if fd != chan.fileno():
                posix.close(fd)
        pidfd = posix.pidfd_open(pid)
        self.children[pidfd] = (pid, chan)
        self.poll.register(pidfd, select.EPOLLIN)
        return True

    def become(self, control: Socket, chan: Socket) -> None:
        """In a new child: serve `control` (a lane), nothing of the server kept."""
        for pidfd, (_, other) in self.children.items():
            posix.close(pidfd)
            other.close()
        self.poll.close()
        self.control.close()
        _report(chan)
        chan.close()
        Server(control).serve()

    def reap(self, pidfd: int) -> None:
        self.poll.unregister(pidfd)
        posix.close(pidfd)
        pid, chan = self.children.pop(pidfd)
        _, status = posix.waitpid(pid, 0)
        try:
            chan.send(b"x" + _ints(status))
        except OSError:
            pass
        chan.close()


def forward(path: str, port: str, argv: list[str]) -> None:
    """Forward 127.0.0.1:`port` to `path` while `argv` runs; exit as it did."""
    listener = _listen(int(port))
    pid = posix.fork()
    if pid == 0:
        listener.close()
        try:
            _execvpe(argv, _environ())
        except OSError as exc:
            posix.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
            posix._exit(127)
    _forward_then_exit(listener, path, pid)


def _environ() -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in posix.environ.items()}


def _undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0) through `_ctypes` (the `ctypes` package costs more)."""
    try:
        import _ctypes

        class _Int(_ctypes._SimpleCData):  # type: ignore[type-arg]
            _type_ = "i"

        class _Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = _Int

        own = _ctypes.dlopen(None)  # type: ignore[arg-type]  # (this process's own symbols)
        _Function(_ctypes.dlsym(own, "prctl"))(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass


def main() -> None:
    if sys.argv[1] == "--forward":
        path, port, sep, *argv = sys.argv[2:]
        assert sep == "--" and argv, "usage: --forward SOCKET PORT -- ARGV..."
        forward(path, port, argv)
    _undumpable()
    fd = int(sys.argv[1])
    posix.set_inheritable(fd, False)
    Server(_unix(fd)).serve()


if __name__ == "__main__":
    main()
