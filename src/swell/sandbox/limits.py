"""How many processes a visit's sandbox may hold (a fork bomb stays in its box).

bwrap has no process limit of its own. A pids cgroup is the one bound that holds for
every user, root included: swell makes one per visit under its own cgroup (cgroup v1's
`pids` hierarchy, or cgroup v2 where pids is enabled there and writable) and each
sandboxed process joins it before bwrap starts (`joining`). Where no such cgroup can be
made, RLIMIT_NPROC set inside the box's user namespace (`prlimit`) bounds a user other
than root; root is exempt from RLIMIT_NPROC, so it then has no process bound
(docs/security.md, "Sandbox").
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import signal
from pathlib import Path

_made = itertools.count(1)
# emptied cgroups of this process's finished visits, reused by the next ones (making and
# removing a cgroup costs a visit milliseconds); removed when swell exits
_free: list[PidsCgroup] = []
_gone: list[PidsCgroup] = []  # given back with processes still ending in them


def _own(controller: str) -> tuple[str, str] | None:
    """(hierarchy id, path) of this process's cgroup for `controller` ('' = v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        ident, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        if controller in names.split(",") or (controller == "" and ident == "0"):
            return ident, path
    return None


def _writable(path: Path) -> bool:
    return (path / "cgroup.procs").is_file() and os.access(path, os.W_OK)


@functools.lru_cache(maxsize=1)
def pids_root() -> Path | None:
    """A cgroup under which swell can make pids-limited children, or None (looked up
    once per process; stale cgroups of swell processes that are gone are removed)."""
    found = _pids_root()
    if found is not None:
        _sweep(found)
        atexit.register(_remove_free)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep(root: Path) -> None:
    """Remove the empty cgroups left by swell processes that were killed."""
    for entry in root.glob("swell-*-*"):
        pid = entry.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                entry.rmdir()


def _remove_free() -> None:
    for cgroups in (_free, _gone):
        while cgroups:
            cgroups.pop().remove()


def _pids_root() -> Path | None:
    v1 = _own("pids")
    if v1 is not None:
        where = Path("/sys/fs/cgroup/pids") / v1[1].lstrip("/")
        if _writable(where):
            return where
    v2 = _own("")
    if v2 is not None:
        where = Path("/sys/fs/cgroup") / v2[1].lstrip("/")
        try:
            enabled = (where / "cgroup.subtree_control").read_text(encoding="utf-8").split()
        except OSError:
            return None
        if "pids" in enabled and _writable(where):
            return where
    return None


class PidsCgroup:
    """One visit's pids cgroup: at most `limit` processes (and threads) at once."""

    def __init__(self, root: Path, limit: int) -> None:
        self.limit = limit
        self.path = root / f"swell-{os.getpid()}-{next(_made)}"
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(limit), encoding="ascii")
        self.refused = 0  # forks refused before this visit (a reused cgroup)
        self.reserved = 0  # processes counted on top of `limit` (a box's lane server)

    @classmethod
    def take(cls, root: Path, limit: int) -> PidsCgroup:
        """A cgroup for a visit: an emptied one of an earlier visit, or a new one."""
        while _free:
            found = _free.pop()
            if found.path.parent == root:
                if found.limit != limit or found.reserved:
                    (found.path / "pids.max").write_text(str(limit), encoding="ascii")
                    found.limit, found.reserved = limit, 0
                found.rearm()
                return found
            found.remove()
        return cls(root, limit)

    def give_back(self) -> None:
        """The visit is over: end what is left in it; keep it for the next visit if it
        is empty, else remove it."""
        left = self._procs()
        if not left:
            _free.append(self)
            return
        for pid in left:  # ending (a pid namespace going down): not waited for here
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
        _gone.append(self)  # removed when swell exits, once they are reaped

    def _procs(self) -> list[str]:
        try:
            return (self.path / "cgroup.procs").read_text(encoding="ascii").split()
        except OSError:
            return []

    def _refused(self) -> int:
        try:
            text = (self.path / "pids.events").read_text(encoding="ascii")
        except OSError:
            return 0
        counts = dict(line.split() for line in text.splitlines() if line.strip())
        return int(counts.get("max", "0"))

    def joining(self, argv: list[str]) -> list[str]:
        """`argv` started inside this cgroup: a shell writes its own pid into it, then
        becomes `argv` (so every process it makes is counted from the first)."""
        join = 'echo $$ > "$0" && exec "$@"'
        return ["/bin/sh", "-c", join, str(self.path / "cgroup.procs"), *argv]

    def reserve(self, extra: int) -> None:
        """Let `extra` processes more in than `limit` (swell's own, not the visit's)."""
        (self.path / "pids.max").write_text(str(self.limit + extra), encoding="ascii")
        self.reserved = extra

    def rearm(self) -> None:
        """A new visit: forks refused before it are not its own."""
        self.refused = self._refused()

    def join(self, pid: int) -> None:
        """Move process `pid` (stopped before it execs: sandbox/boxes.py) into it."""
        (self.path / "cgroup.procs").write_text(str(pid), encoding="ascii")

    def reached(self) -> bool:
        """Whether a fork was refused in this visit because the limit was reached."""
        return self._refused() > self.refused

    def kill(self, but: int | None = None) -> None:
        """SIGKILL every process in the cgroup but `but` (until none is left to add more)."""
        for _ in range(100):
            pids = [p for p in self._procs() if int(p) != but]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)

    def remove(self) -> None:
        """End what is left in it, then remove it (an empty cgroup only goes once its
        processes are reaped: a failure leaves an empty directory, harmless)."""
        self.kill()
        with contextlib.suppress(OSError):
            self.path.rmdir()


def rlimit_prefix(limit: int) -> list[str]:
    """The argv prefix (run inside the box, after its user namespace is made) that sets
    RLIMIT_NPROC: counted there per namespace, it bounds the box's processes alone."""
    return ["prlimit", f"--nproc={limit}:{limit}", "--"]
