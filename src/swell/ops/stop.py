"""`swell cancel --force`: end the process executing a run when asking did not.

The process holding the run's claim (`Store.owner`) is sent SIGTERM with its process
group (a detached run leads a group of its own; a run started from a shell is its
job's group, never the group of the `swell cancel` process), then SIGKILL if it has
not let the run go within a few seconds. Steps run in process groups of their own, so
whatever they left running is then found by the `SWELL_RUN_ID` marker in its
environment (`sweep.stop_marked`, this run and its sub-pipeline runs) and ended too.
The run, no longer executed, is closed as cancelled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from typing import TYPE_CHECKING

from swell.errors import RunStateError

if TYPE_CHECKING:
    from swell.runtime import Runtime

KILL_WAIT = 3.0  # seconds after SIGTERM before SIGKILL


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        pgid = os.getpgid(pid)
        if pgid == os.getpgrp():  # never our own group
            os.kill(pid, sig)
        else:
            os.killpg(pgid, sig)


def _released(rt: Runtime, run_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while rt.store.owner(run_id) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _family(rt: Runtime, run_id: str) -> list[str]:
    ids = [run_id]
    for child in rt.store.children(run_id):
        ids += _family(rt, child.id)
    return ids


async def kill_owner(rt: Runtime, run_id: str) -> list[str]:
    """Kill the process executing `run_id` and what its steps left; cancel the run.
    Returns what was done, one line each."""
    from swell import sweep
    from swell.runtime import FINAL, cancel_stored_run

    done: list[str] = []
    owner = rt.store.owner(run_id)
    if owner is not None:
        if owner.host != socket.gethostname():
            raise RunStateError(
                f"run {run_id} is executed by pid {owner.pid} on {owner.host}; "
                "run `swell cancel --force` there"
            )
        _signal(owner.pid, signal.SIGTERM)
        if not _released(rt, run_id, KILL_WAIT):
            _signal(owner.pid, signal.SIGKILL)
            _released(rt, run_id, KILL_WAIT)
        done.append(f"killed process {owner.pid} (and its process group)")
    left = []
    for rid in _family(rt, run_id):
        left += await sweep.stop_marked([f"SWELL_RUN_ID={rid}"])
    if left:
        done.append(f"stopped {len(left)} process(es) its steps left running")
    run = rt.store.get_run(run_id)
    if run.status not in FINAL:
        done += [f"cancelled run {rid}" for rid in cancel_stored_run(rt, run)]
    elif run.status == "cancelled":
        done.append(f"cancelled run {run_id}")
    return done


__all__ = ["kill_owner"]
