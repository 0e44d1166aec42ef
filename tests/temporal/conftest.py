"""The Temporal executor's tests: a real dev server (tests/temporal_server.py) for the
session, real `swell worker` processes, each test on a task queue of its own."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import swell_cmd, swell_json, wait_for
from temporal_server import TemporalServer, temporal_server  # noqa: F401 - a fixture

_queues = itertools.count(1)

FINAL = ("succeeded", "failed", "cancelled", "rejected")


def run_end(project: Path, run_id: str, timeout: float = 90) -> dict[str, object]:
    """The run's `swell status --json` once it ended; a run no worker took yet is
    "pending", not ended."""
    status: dict[str, object] = wait_for(
        lambda: (s := swell_json("status", run_id, cwd=project))["status"] in FINAL and s, timeout
    )
    return status


@dataclass
class Workers:
    """`swell worker` processes of one test, stopped when it ends."""

    cwd: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def start(self, slots: int = 4, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """A worker (`env`: over this process's); returns once it polls its queue. Its
        output goes to a log file (a pipe nobody reads could fill up and stall it)."""
        log = self.cwd.parent / f"worker-{len(self.procs) + 1}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [*swell_cmd("worker", "--slots", str(slots))],
                cwd=self.cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
                env={**os.environ, **env} if env else None,
            )
        self.procs.append(proc)
        wait_for(lambda: "worker ready" in log.read_text() or proc.poll() is not None, 60)
        assert proc.poll() is None, log.read_text()
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture
def engine(temporal_server: TemporalServer, monkeypatch: pytest.MonkeyPatch) -> TemporalServer:  # noqa: F811
    """The dev server's address and a queue of this test's own, for every `swell` the
    test starts (workers and clients alike)."""
    monkeypatch.setenv("SWELL_TEMPORAL_ADDRESS", temporal_server.address)
    monkeypatch.setenv("SWELL_TEMPORAL_QUEUE", f"test-{os.getpid()}-{next(_queues)}")
    return temporal_server


@pytest.fixture
def workers(engine: TemporalServer, project: Path) -> Iterator[Workers]:
    pool = Workers(project)
    try:
        yield pool
    finally:
        pool.stop()
