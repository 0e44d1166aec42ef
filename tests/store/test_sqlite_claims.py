"""How the SQLite store knows who executes a run (store/sqlite/run_locks.py): a lock the
kernel holds on a byte of the database file for the claiming process, so no file per
run, nothing a step can remove or replace, and a claim that ends with its process."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from swell.errors import RunBusy
from swell.store.location import open_store
from swell.store.rows import Owner

CLAIMER = """
import sys, time
from swell.store.location import open_store
store = open_store(sys.argv[1])
store.claim("r1")
print("claimed", flush=True)
time.sleep(60)
"""


def test_a_claim_is_held_by_its_process_and_ends_with_it_even_killed(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = open_store(path)
    store.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    child = subprocess.Popen(
        [sys.executable, "-c", CLAIMER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "claimed"
        assert store.owner("r1") == Owner(child.pid, socket.gethostname())
        with pytest.raises(
            RunBusy, match=rf"^run r1 is already being executed by pid {child.pid} on "
        ):
            store.claim("r1")
        # the claim is in the database file: nothing beside SQLite's own files and the
        # writers' line (sqlite/writers.py)
        assert sorted(p.name for p in tmp_path.iterdir()) == [
            "state.db",
            "state.db-shm",
            "state.db-wal",
            "state.db-writers",
        ]
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert store.owner("r1") is None  # the kernel let go when the process ended
        store.claim("r1")
        assert store.owner("r1") == Owner(os.getpid(), socket.gethostname())
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
        store.close()


def _open_under(root: Path) -> list[str]:
    """The files under `root` this process holds open (other threads of the test
    process, such as pytest-xdist's, open and close their own meanwhile)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since it was listed
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(root)):
                found.append(target)
    return sorted(found)


def test_handles_opened_and_closed_by_the_thousand_keep_no_file_open(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    first = open_store(path)
    first.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    first.claim("r1")
    fds = None
    for n in range(1000):
        if n == 1:  # after the first: what stays open anyway
            fds = _open_under(tmp_path)
        handle = open_store(path)
        assert handle.owner("r1") is not None
        with pytest.raises(RunBusy):
            handle.claim("r1")
        handle.close()
        other = open_store(tmp_path / f"other-{n % 3}.db")
        other.close()
    assert _open_under(tmp_path) == fds
    assert first.owner("r1") is not None  # closing the others left the first's claim
    first.close()
    again = open_store(path)
    again.claim("r1")
    again.close()
