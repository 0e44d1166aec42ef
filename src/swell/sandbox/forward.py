"""Run inside a sandbox without network: listen on 127.0.0.1:PORT, pass each connection to
swell's egress proxy through the unix socket bound into the sandbox, and run the command.

Started as `python forward.py SOCKET PORT -- ARGV...`; stdlib only, run by path (the
sandbox's environment has no PYTHONPATH). Exits with the command's exit code.
"""

import contextlib
import os
import socket
import sys
import threading


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


def _serve(server: socket.socket, path: str) -> None:
    while True:
        client, _ = server.accept()
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def main() -> int:
    path, port, sep, *argv = sys.argv[1:]
    assert sep == "--" and argv, "usage: forward.py SOCKET PORT -- ARGV..."
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(port)))
    server.listen(128)
    pid = os.fork()
    if pid == 0:
        server.close()
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"{argv[0]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)
    threading.Thread(target=_serve, args=(server, path), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
