"""A real Postgres server for the tests that need one, started once per session.

`postgres_server` (a session fixture) runs Debian's `postgresql` binaries
(/usr/lib/postgresql/*/bin; `apt-get install postgresql`): `initdb` into a temporary
directory, then `pg_ctl start` listening on 127.0.0.1 only, on a free port, with its
socket in that directory; stopped (`pg_ctl stop -m immediate`) when the session ends.
Durability is off (fsync, synchronous_commit): the data is thrown away.

initdb refuses to run as root, so as root the server runs as `nobody` (`runuser -u
nobody`), its directory handed to that user; the tests connect over TCP as the
database superuser `swell` (trust authentication: the server is reachable from this
machine only, and lives for one session).

When the binaries are missing the tests that use it skip, saying why, unless
SWELL_REQUIRE_POSTGRES=1 (CI), which makes them fail.

Each test gets a fresh schema (`fresh_schema`): a URL whose `search_path` is a new,
empty schema, so tests share one server and never see each other's runs.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

USER = "swell"  # the database superuser initdb creates
_schemas = itertools.count(1)


@dataclass
class PostgresServer:
    port: int
    directory: Path

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def fresh_schema(self) -> str:
        """The URL of a new, empty schema of the server's database."""
        import psycopg
        from psycopg import sql

        name = f"t{os.getpid()}_{next(_schemas)}"
        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        return f"{self.url}?options=-csearch_path%3D{name}"


def binaries() -> Path | None:
    """The newest installed Postgres's bin directory, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _version(path: str) -> tuple[int, ...]:
    part = Path(path).parts[-3]
    return tuple(int(p) for p in part.split(".") if p.isdigit())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _missing(reason: str) -> None:
    if os.environ.get("SWELL_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"{reason} (SWELL_REQUIRE_POSTGRES=1)")
    pytest.skip(reason)


def start(directory: Path) -> PostgresServer:
    bin_dir = binaries()
    if bin_dir is None:
        _missing("Postgres is not installed (no initdb; apt-get install postgresql)")
        raise AssertionError  # not reached
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb will not run as root: the server runs as nobody
        nobody = pwd.getpwnam("nobody")
        os.chown(directory, nobody.pw_uid, nobody.pw_gid)
        as_user = ["runuser", "-u", "nobody", "--"]
    data = directory / "data"
    subprocess.run(
        [
            *as_user,
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    last = ""
    for _ in range(3):  # a free port may be taken before the server binds it
        port = _free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {directory} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        )
        started = subprocess.run(
            [
                *as_user,
                str(bin_dir / "pg_ctl"),
                "start",
                "-w",
                "-D",
                str(data),
                "-l",
                str(directory / "server.log"),
                "-o",
                options,
            ],
            capture_output=True,
            text=True,
        )
        if started.returncode == 0:
            return PostgresServer(port, directory)
        last = started.stderr + (directory / "server.log").read_text(errors="replace")
    raise RuntimeError(f"Postgres did not start:\n{last}")


def stop(server: PostgresServer) -> None:
    bin_dir = binaries()
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    if bin_dir is not None:
        subprocess.run(
            [
                *as_user,
                str(bin_dir / "pg_ctl"),
                "stop",
                "-m",
                "immediate",
                "-w",
                "-D",
                str(server.directory / "data"),
            ],
            capture_output=True,
        )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("psycopg is not installed (pip install 'swell[postgres]')")
    directory = Path(tempfile.mkdtemp(prefix="swell-pg-"))
    server = start(directory)
    try:
        yield server
    finally:
        stop(server)
        shutil.rmtree(directory, ignore_errors=True)
