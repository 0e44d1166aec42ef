"""Postgres's own behaviour, beyond the conformance suite: claims that end with the
claiming connection, NOTIFY on commit, migrations, how the store is chosen, and the
error when psycopg is missing."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from postgres_server import PostgresServer
from swell.errors import StoreError
from swell.events import models as ev
from swell.store.location import open_project_store, open_store
from swell.store.rows import Owner

from .conftest import stamp

CLAIMER = """
import sys, time
from swell.store.location import open_store
store = open_store(sys.argv[1])
store.claim("r1")
print("claimed", flush=True)
time.sleep(60)
"""


def test_a_claim_ends_with_the_claiming_process_even_killed(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.fresh_schema()
    store = open_store(url)
    store.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    child = subprocess.Popen(
        [sys.executable, "-c", CLAIMER, url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "claimed"
        assert store.owner("r1") == Owner(child.pid, socket.gethostname())
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 10
        while store.owner("r1") is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert store.owner("r1") is None  # the server ended the dead process's session
        store.claim("r1")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
        store.close()


def test_close_returns_once_the_server_let_the_claims_go(postgres_server: PostgresServer) -> None:
    """Closing a connection only tells the server to end the session: a claim made again
    at once could find the lock still held (issue 27)."""
    url = postgres_server.fresh_schema()
    store = open_store(url)
    store.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    try:
        for _ in range(30):
            other = open_store(url)
            other.claim("r1")
            other.close()
            store.claim("r1")
            store.release("r1")
    finally:
        store.close()


def test_a_commit_notifies_the_stores_channel(postgres_server: PostgresServer) -> None:
    import psycopg

    from swell.store.postgres.listen import listen
    from swell.store.postgres.store import PostgresStore

    url = postgres_server.fresh_schema()
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    store.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    with psycopg.connect(url, autocommit=True) as listener:
        listen(listener, store.channel)
        store.emit([stamp("r1", 1, ev.RunStarted(pipeline="p"))])
        got = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
        assert got == ["r1"]
        with pytest.raises(StoreError):  # a batch that does not commit notifies no one
            store.emit([stamp("r1", 1, ev.RunStarted(pipeline="p"))])
        assert list(listener.notifies(timeout=0.3, stop_after=1)) == []
    store.close()


def test_a_commit_notifies_only_while_a_follower_listens(postgres_server: PostgresServer) -> None:
    """Each notifying commit takes a lock of the whole database (Postgres queues the
    notification at commit): a store no one follows commits without one (issue 35)."""
    import psycopg
    from psycopg import sql

    from swell.store.postgres.listen import listen, unlisten
    from swell.store.postgres.store import PostgresStore

    url = postgres_server.fresh_schema()
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    store.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    with psycopg.connect(url, autocommit=True) as raw, psycopg.connect(url) as follower:
        follower.autocommit = True
        raw.execute(sql.SQL("LISTEN {}").format(sql.Identifier(store.channel)))
        store.emit([stamp("r1", 1, ev.RunStarted(pipeline="p"))])
        assert list(raw.notifies(timeout=0.3, stop_after=1)) == []  # no follower: no NOTIFY
        listen(follower, store.channel)
        store.emit([stamp("r1", 2, ev.Warning(message="w"))])
        assert [n.payload for n in follower.notifies(timeout=5, stop_after=1)] == ["r1"]
        assert [n.payload for n in raw.notifies(timeout=5, stop_after=1)] == ["r1"]
        unlisten(follower)
        store.emit([stamp("r1", 3, ev.Warning(message="w"))])
        assert list(raw.notifies(timeout=0.3, stop_after=1)) == []
    store.close()


def test_migrations_run_once_even_when_processes_race(postgres_server: PostgresServer) -> None:
    from swell.store.postgres.migrations import MIGRATIONS

    url = postgres_server.fresh_schema()
    opened: list[object] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(open_store(url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(opened) == 4
    store = opened[0]
    versions = store.db.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()  # type: ignore[attr-defined]
    assert [v for (v,) in versions] == list(range(1, len(MIGRATIONS) + 1))
    for handle in opened:
        handle.close()  # type: ignore[attr-defined]


def test_swell_store_or_runtime_store_chooses_postgres(
    postgres_server: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from swell.store.postgres.store import PostgresStore
    from swell.store.sqlite.store import SqliteStore

    project = tmp_path / "p"
    project.mkdir()
    (project / "wave.yaml").write_text("kind: WaveManifest\n")
    default = open_project_store(project)
    assert isinstance(default, SqliteStore)  # nothing configured: SQLite as ever
    default.close()
    url = postgres_server.fresh_schema()
    (project / "wave.yaml").write_text(f"kind: WaveManifest\nruntime:\n  store: '{url}'\n")
    configured = open_project_store(project)
    assert isinstance(configured, PostgresStore) and configured.url == url
    configured.close()
    monkeypatch.setenv("SWELL_STORE", f"sqlite://{tmp_path / 'env.db'}")  # the env wins
    chosen = open_project_store(project)
    assert isinstance(chosen, SqliteStore) and chosen.path == tmp_path / "env.db"
    chosen.close()


def test_a_password_never_shows_in_messages() -> None:
    from swell.store.postgres.store import redacted

    assert redacted("postgresql://me:s3cret@db:5432/swell") == "postgresql://me:***@db:5432/swell"
    assert redacted("postgresql://me@db/swell") == "postgresql://me@db/swell"
    assert redacted("postgresql://db/swell?user=me&password=s3cret&sslmode=require") == (
        "postgresql://db/swell?user=me&password=***&sslmode=require"
    )
    with pytest.raises(StoreError) as err:
        open_store("postgresql://me:s3cret@127.0.0.1:1/swell?connect_timeout=2")
    assert "s3cret" not in str(err.value)
    assert str(err.value).startswith("cannot open the Postgres store at postgresql://me:***@")


def test_without_psycopg_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg fails
    monkeypatch.delitem(sys.modules, "swell.store.postgres.store", raising=False)
    with pytest.raises(StoreError) as err:
        open_store("postgresql://127.0.0.1/swell")
    assert str(err.value) == "the Postgres store needs psycopg: pip install 'swell[postgres]'"


def test_a_negative_limit_lists_every_run_as_sqlite_does(postgres_server: PostgresServer) -> None:
    store = open_store(postgres_server.fresh_schema())
    for n in range(3):
        store.create_run(run_id=f"r{n}", pipeline="p", input_text="", workspace="/ws")
    assert [r.id for r in store.list_runs(-1)] == ["r2", "r1", "r0"]
    store.close()
