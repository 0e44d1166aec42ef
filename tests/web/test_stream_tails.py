"""The live streams of one run share one tail (web/tails.py), over SQLite and over
Postgres: a real `swell serve` on the store, clients over HTTP, and the run's events
committed by this process through the store's writer API, as a run loop commits them.

What a user sees: every client gets every event once and in order, a client that
joins a long live run late included (it reads the run's start from the store, then
the tail), and the stream ends once the run has; `/metrics` shows one tail for the
run however many clients watch it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import wait_for
from postgres_server import PostgresServer
from swell.events import models as ev
from swell.store.location import open_store
from swell.store.protocols import Store

RUN = "tails-20261128-000000-test"
MANY = 2100  # visits before the late client joins: 2 events each, more than a tail keeps (4,000)


class Writer:
    """Commits the run's events as a run loop would: a batch per visit."""

    def __init__(self, store: Store) -> None:
        self.store, self.seq, self.visits = store, 0, 0

    def commit(self, events: list[Any]) -> None:
        ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        for event in events:
            self.seq += 1
            event.run_id, event.seq, event.ts = RUN, self.seq, ts
        self.store.emit(events)

    def start(self) -> None:
        self.store.create_run(run_id=RUN, pipeline="work", input_text="", workspace="/ws")
        self.commit([ev.RunStarted(pipeline="work", workspace="/ws")])

    def visit(self) -> None:
        self.visits += 1
        self.commit(
            [
                ev.StepStarted(step_id="work", visit=self.visits, kind="command"),
                ev.StepFinished(step_id="work", visit=self.visits, outcome="success", exit_code=0),
            ]
        )

    def finish(self) -> None:
        self.commit([ev.RunFinished(status="succeeded", visits=self.visits, duration_ms=1)])


class Client:
    """One SSE client of the run's stream, reading in a thread of its own."""

    def __init__(self, url: str, after: int = 0) -> None:
        self.seqs: list[int] = []
        self.ended = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._read, args=(url, after), daemon=True)
        self.thread.start()

    def _read(self, url: str, after: int) -> None:
        try:
            with httpx.stream("GET", f"{url}/api/runs/{RUN}/stream?after={after}", timeout=60) as r:
                kind = None
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        kind = line.removeprefix("event: ")
                        if kind == "end":
                            self.ended.set()
                            return
                    elif line.startswith("data: ") and kind == "swell":
                        self.seqs.append(json.loads(line.removeprefix("data: "))["seq"])
        except BaseException as exc:  # reported by the test
            self.error = exc
            self.ended.set()


def metric(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = [ln for ln in text.splitlines() if ln.startswith(f"{name} ")]
    assert found, f"/metrics has no {name}"
    return float(found[0].split()[1])


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(
    request: pytest.FixtureRequest, tmp_path: Path, postgres_server: PostgresServer
) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "state.db")
    return postgres_server.fresh_schema()


@pytest.fixture
def serve(project: Path, store_url: str) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SWELL_STORE": store_url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "swell", "serve", "--port", str(port)],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=240)  # a loaded machine starts a server slowly
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_clients_of_a_live_run_share_one_tail_and_a_late_one_misses_nothing(
    store_url: str, serve: str
) -> None:
    writer = Writer(open_store(store_url))
    try:
        writer.start()
        writer.visit()
        first, second = Client(serve), Client(serve)
        wait_for(lambda: len(first.seqs) == len(second.seqs) == writer.seq, timeout=60)
        assert metric(serve, "swell_stream_clients") == 2
        assert metric(serve, "swell_stream_tails") == 1  # one tail for both
        for _ in range(MANY):
            writer.visit()
        late = Client(serve)  # from the run's start, long after the tail began
        resume_at = writer.seq - 3
        resumed = Client(serve, after=resume_at)  # as a reconnect's Last-Event-ID
        wait_for(lambda: len(late.seqs) > 0 and len(resumed.seqs) > 0, timeout=60)
        assert metric(serve, "swell_stream_tails") == 1
        for _ in range(20):
            writer.visit()
        writer.finish()
        for client in (first, second, late, resumed):
            assert client.ended.wait(timeout=120)
            assert client.error is None
        everything = list(range(1, writer.seq + 1))
        assert first.seqs == second.seqs == late.seqs == everything
        assert resumed.seqs == everything[resume_at:]
        wait_for(lambda: metric(serve, "swell_stream_tails") == 0, timeout=30)
    finally:
        writer.store.close()


def test_a_stream_of_an_ended_run_sends_it_all_then_ends(store_url: str, serve: str) -> None:
    writer = Writer(open_store(store_url))
    try:
        writer.start()
        for _ in range(700):  # more than one batch of the store
            writer.visit()
        writer.finish()
    finally:
        writer.store.close()
    client = Client(serve)
    assert client.ended.wait(timeout=120)
    assert client.seqs == list(range(1, writer.seq + 1))
