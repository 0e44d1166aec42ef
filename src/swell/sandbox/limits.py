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

import contextlib
import itertools
import os
import signal
from pathlib import Path

_made = itertools.count(1)


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


def pids_root() -> Path | None:
    """A cgroup under which swell can make pids-limited children, or None."""
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

    def joining(self, argv: list[str]) -> list[str]:
        """`argv` started inside this cgroup: a shell writes its own pid into it, then
        becomes `argv` (so every process it makes is counted from the first)."""
        join = 'echo $$ > "$0" && exec "$@"'
        return ["/bin/sh", "-c", join, str(self.path / "cgroup.procs"), *argv]

    def reached(self) -> bool:
        """Whether a fork was refused because the limit was reached."""
        try:
            text = (self.path / "pids.events").read_text(encoding="ascii")
        except OSError:
            return False
        counts = dict(line.split() for line in text.splitlines() if line.strip())
        return int(counts.get("max", "0")) > 0

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (until none is left to add more)."""
        for _ in range(100):
            try:
                pids = (self.path / "cgroup.procs").read_text(encoding="ascii").split()
            except OSError:
                return
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
