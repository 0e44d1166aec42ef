"""Processes a visit left behind: found by the markers in their environment, ended
with their process groups.

Every process a visit starts carries `SWELL_RUN_ID`, `SWELL_STEP_ID` and
`SWELL_VISIT` in its environment (`NAME=value` markers), and its children inherit
them, also those that leave the visit's process group (`setsid`, `nohup … &`, a
double fork). `find_marked` finds live processes carrying every marker asked for;
`stop_marked` ends them, group by group (SIGTERM, grace, SIGKILL, and again until
none is left).

Where to look. While a run goes on, swell is a *child subreaper* (`adopting`;
Linux `prctl(PR_SET_CHILD_SUBREAPER)`): a process whose parent ends is re-parented
to swell instead of to init, so whatever a visit started, however it left its
process group, stays a descendant of swell until it ends. A sweep of swell's own
processes (`mine=True`) therefore reads swell's process tree
(`/proc/self/task/*/children`, then each child's) instead of every process on the
machine: a few files, however many processes the machine runs. Looking everywhere
is still what `swell resume` does (a killed swell's leftovers were re-parented
elsewhere), and what every sweep does where the subreaper is not available (not
Linux, or prctl refused).

Adopted processes are swell's children, so swell reaps them (`reap_adopted`) once
they have ended, except processes that the process runner itself started and waits
for (`track`), and processes in swell's own session (what a library ran with
`subprocess.run`, which waits for them itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

SWEEP_ROUNDS = 5  # a process may fork while it is being stopped; look again this often
POLL_SECONDS = 0.05
_PR_SET_CHILD_SUBREAPER = 36

_adopting = 0  # nesting depth of `adopting()`; > 0: this process is a subreaper
_subreaper_ok: bool | None = None  # whether prctl worked (None: not tried yet)
_tracked: set[int] = set()  # children the process runner waits for itself
_spawning = 0  # spawns under way whose pid is not tracked yet
_PROC = os.path.isdir("/proc")


@dataclass(frozen=True)
class Marked:
    """A live process whose environment carries the markers looked for."""

    pid: int
    pgid: int
    command: str  # its command line, cut to 200 characters

    def __str__(self) -> str:
        return f"{self.pid} ({self.command})"


# ---------------------------------------------------------------------- the subreaper


def _prctl_subreaper(on: bool) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only here: a run on Linux

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # this process's own symbols: libc's
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def adopting() -> Iterator[bool]:
    """While inside (nested uses share it), processes orphaned below this one are
    re-parented to it, and `mine=True` sweeps read only its process tree. Yields
    whether that is so (False where the kernel does not offer it)."""
    global _adopting, _subreaper_ok
    if _adopting == 0:
        _subreaper_ok = _prctl_subreaper(True)
    _adopting += 1
    try:
        yield bool(_subreaper_ok)
    finally:
        _adopting -= 1
        if _adopting == 0 and _subreaper_ok:
            _prctl_subreaper(False)
            _subreaper_ok = None
            reap_adopted()


def is_adopting() -> bool:
    return _adopting > 0 and bool(_subreaper_ok)


def track(pid: int) -> None:
    """`pid` is a child the caller waits for itself: never reap it."""
    _tracked.add(pid)


def untrack(pid: int) -> None:
    _tracked.discard(pid)


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Around a spawn that awaits before its pid is known (and tracked): no reaping
    meanwhile, or a child that ends at once could be reaped before its waiter sees it."""
    global _spawning
    _spawning += 1
    try:
        yield
    finally:
        _spawning -= 1


# ------------------------------------------------------------------------ /proc


def _read(path: str, limit: int = 1 << 20) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        size = 0
        while size < limit and (data := os.read(fd, 65536)):
            chunks.append(data)
            size += len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _children(pid: int) -> list[int]:
    """The children of every thread of `pid` (empty when it is gone)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            found += [int(c) for c in _read(f"/proc/{pid}/task/{tid}/children").split()]
        except (OSError, ValueError):
            continue
    return found


def _has_children() -> bool:
    """Whether any thread of this process has a child, running or ended: one system
    call (`waitid` without waiting or reaping), where reading `_children` takes
    several. A loop of short command steps asks after every visit."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def descendants() -> list[int]:
    """Every process below this one (children first), zombies included."""
    found: list[int] = []
    todo = [os.getpid()]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _all_pids() -> list[int]:
    with os.scandir("/proc") as entries:
        return [int(e.name) for e in entries if e.name.isdigit()]


def find_marked(markers: Sequence[str], *, mine: bool = False) -> list[Marked]:
    """Live processes whose environment holds every one of `markers` (`NAME=value`),
    swell itself and its own process group excepted. `mine`: only processes swell
    started (its descendants, when it is a subreaper; else everywhere). Linux only
    (reads /proc); elsewhere nothing is found. A zombie has no environment left and
    is not found."""
    found: list[Marked] = []
    if not _PROC:
        return found
    needles = [m.encode() for m in markers]
    me, my_group = os.getpid(), os.getpgrp()
    pids = descendants() if mine and is_adopting() else _all_pids()
    for pid in pids:
        if pid == me:
            continue
        try:
            environ = _read(f"/proc/{pid}/environ").split(b"\0")
            if not all(n in environ for n in needles):
                continue
            pgid = os.getpgid(pid)
            command = _read(f"/proc/{pid}/cmdline", 4096).replace(b"\0", b" ").strip()
        except (OSError, ValueError):  # gone, or not ours to read
            continue
        if pgid != my_group:
            found.append(Marked(pid, pgid, command.decode(errors="replace")[:200]))
    return found


def group_members(pgid: int) -> list[Marked]:
    """Live members of process group `pgid` (not zombies): swell's descendants while it
    adopts orphans, else every process. Linux only."""
    found: list[Marked] = []
    if not _PROC:
        return found
    for pid in descendants() if is_adopting() else _all_pids():
        try:
            fields = _read(f"/proc/{pid}/stat", 4096).rsplit(b")", 1)[1].split()
            if fields[0] == b"Z" or int(fields[2]) != pgid:
                continue
            command = _read(f"/proc/{pid}/cmdline", 4096).replace(b"\0", b" ").strip()
        except (OSError, IndexError, ValueError):
            continue
        found.append(Marked(pid, pgid, command.decode(errors="replace")[:200]))
    return found


def marked_groups(markers: Sequence[str]) -> set[int]:
    """Process groups of the processes `find_marked` finds (everywhere)."""
    return {m.pgid for m in find_marked(markers)}


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal_all(found: Sequence[Marked], sig: int) -> None:
    for group in {m.pgid for m in found}:
        _signal_group(group, sig)
    for m in found:  # a member that moved to another group since it was found
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(m.pid, sig)


async def stop_marked(
    markers: Sequence[str], grace: float = 1.0, *, mine: bool = False
) -> list[Marked]:
    """End every process `find_marked` finds, with its process group: SIGTERM, up to
    `grace` seconds to exit, then SIGKILL; looked for again (a process may have forked
    meanwhile) until none is left. Steps run in process groups of their own and may
    leave them (`setsid`, double forks), so the groups alone do not find everything.
    Returns what was found (empty: nothing was running)."""
    if mine and is_adopting() and not _has_children():
        return []  # nothing runs below swell: nothing is left, nothing to reap
    stopped: dict[int, Marked] = {}
    found = find_marked(markers, mine=mine)
    for _ in range(SWEEP_ROUNDS):
        if not found:
            break
        stopped.update((m.pid, m) for m in found)
        _signal_all(found, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while found and time.monotonic() < deadline:
            await asyncio.sleep(POLL_SECONDS)
            reap_adopted()  # an ended adopted process is a zombie until reaped
            found = find_marked(markers, mine=mine)
        if found:
            _signal_all(found, signal.SIGKILL)
            await asyncio.sleep(POLL_SECONDS)
            found = find_marked(markers, mine=mine)
    if is_adopting():
        reap_adopted()
    return list(stopped.values())


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, session id) of a process, from /proc/PID/stat."""
    try:
        fields = _read(f"/proc/{pid}/stat", 4096).rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[3])
    except (OSError, IndexError, ValueError):
        return None


def reap_adopted() -> int:
    """Reap the children of this process that have ended and that nobody else waits
    for: adopted orphans (a subreaper's), not those the process runner tracks, not
    those in swell's own session. Returns how many were reaped."""
    if _spawning or not _PROC:
        return 0
    my_session = os.getsid(0)
    reaped = 0
    for pid in _children(os.getpid()):
        if pid in _tracked:
            continue
        stat = _stat(pid)
        if stat is None or stat[0] != "Z" or stat[1] == my_session:
            continue
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped += 1
    return reaped
