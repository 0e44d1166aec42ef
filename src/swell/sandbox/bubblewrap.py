"""The bubblewrap backend (Debian's `bubblewrap`, the `bwrap` binary).

Each process is started as `bwrap [namespaces] [mounts] -- argv`: new user, pid and ipc
namespaces (and a network namespace when the box has no network), no
capabilities, no nested user namespaces, a new session, and `--die-with-parent`, so the
whole tree inside dies with bwrap and bwrap with swell (`kill -9` included). A
visit's processes run in a long-lived bwrap of this argv instead (sandbox/boxes.py). In its own
pid namespace a process sees no process outside the box (it cannot signal or trace swell).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from swell.sandbox.base import EGRESS_DIR, PROXY_PORT, Box

# passed as `python -c` text: the source tree may sit under /tmp, which the box replaces
# (the box server's source, which forwards too: `--forward`)
FORWARDER = Path(__file__).with_name("boxserver.py").read_text(encoding="utf-8")
PYTHON = os.path.realpath(sys.executable)  # run with -I -S: the stdlib is all it needs

INSTALL = (
    "install it with `apt-get install bubblewrap` (Debian, Ubuntu) or `dnf install bubblewrap`"
)
# sockets of the host's services (docker, dbus, ssh and gpg agents under /run/user) live
# in /run: a read-only mount does not stop a connect(), so /run is hidden as a whole,
# except what name resolution needs (systemd-resolved's resolv.conf)
RUN_DIRS = (Path("/run"),)
RUN_KEPT = (Path("/run/systemd/resolve"),)
TMP = Path("/tmp")  # private to each process tree: a tmpfs
# no uts or cgroup namespace: they hide little (the host name, the cgroup path) and
# cost about 6 ms each per process (benchmarks/sandbox_overhead.py)
_NAMESPACES = (
    "--unshare-user", "--unshare-ipc", "--unshare-pid",
    "--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
)  # fmt: skip


_TMP_PROBE = ("--size", "1048576", "--tmpfs", "/tmp")


# what decides whether bwrap can make a sandbox, besides its binary: the boot, and the
# kernel's switches for unprivileged user namespaces (Debian's, the upstream limit,
# Ubuntu's AppArmor restriction)
KNOBS = (
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)


def _fingerprint(binary: str) -> str | None:
    """What a probe's success holds for (see `_probe`), or None when it cannot be said."""
    try:
        found = os.stat(binary)
    except OSError:
        return None
    knobs = []
    for knob in KNOBS:
        try:
            knobs.append(Path(knob).read_text(encoding="ascii").strip())
        except OSError:
            knobs.append("")
    facts = (os.path.realpath(binary), found.st_ino, found.st_size, found.st_mtime_ns, os.getuid())
    return hashlib.sha256(repr((*facts, *knobs)).encode()).hexdigest()[:32]


def _probed(binary: str) -> Path | None:
    """The file whose presence says `binary` made a sandbox here since the last boot."""
    from swell.manifest.cache import cache_dir

    where, stamp = cache_dir(), _fingerprint(binary)
    return None if where is None or stamp is None else where / "bwrap-ok" / stamp


@functools.lru_cache(maxsize=1)
def _probe(binary: str) -> str | None:
    """Whether `binary` can make a sandbox here (user namespaces may be disabled). A
    success is remembered (`_probed`: the binary, the boot and the kernel's switches),
    so a run's start does not wait for a bwrap that worked before; a failure never is."""
    known = _probed(binary)
    if known is not None and known.exists():
        return None
    problem = _run_probe(binary)
    if problem is None and known is not None:
        with contextlib.suppress(OSError):
            known.parent.mkdir(parents=True, exist_ok=True)
            known.touch()
    return problem


def _run_probe(binary: str) -> str | None:
    import subprocess

    try:
        done = subprocess.run(
            [binary, *_NAMESPACES, "--ro-bind", "/", "/", *_TMP_PROBE, "--", "true"],
            capture_output=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} does not run: {exc}"
    said = done.stderr.decode(errors="replace").strip()
    if done.returncode != 0 and "--size" in said:
        return f"{binary} is too old for the sandbox's /tmp size limit (--size): 0.8 or newer"
    if done.returncode != 0:
        return (
            f"{binary} cannot make a sandbox here ({said or f'exit code {done.returncode}'}); "
            "it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "and on Ubuntu 24.04 an AppArmor profile for bwrap)"
        )
    return None


def _depth(path: Path) -> int:
    return len(path.parts)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _existing(paths: Iterable[Path]) -> list[Path]:
    return [p for p in paths if os.path.lexists(p)]


class Bubblewrap:
    """`Backend` over bwrap."""

    name = "bubblewrap"

    def __init__(self, path: str | None = None) -> None:
        """`path`: where to look for bwrap (default $PATH)."""
        self.binary = shutil.which("bwrap", path=path) or ""

    def problem(self) -> str | None:
        if not self.binary:
            return f"runtime.sandbox needs bubblewrap (bwrap), which is not on PATH: {INSTALL}"
        return _probe(self.binary)

    def wrap(self, argv: Sequence[str], cwd: Path, box: Box, forward: bool = True) -> list[str]:
        args = [self.binary, *_NAMESPACES]
        if not box.network or box.proxy is not None:
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if box.tmp_size is not None:  # a step filling /tmp fills its own tmpfs, no more
            args += ["--size", str(box.tmp_size)]
        args += ["--tmpfs", "/tmp"]
        args += _layers(box.hidden, box.visible, box.writable, box.home, box.readonly)
        for path in _existing(box.rewritable):
            args += ["--bind", str(path), str(path)]
        for source, target in box.logins:
            args += ["--ro-bind", str(source), str(target)]
        if box.proxy is not None:  # a socket in it takes connections: read-only holds no less
            args += ["--ro-bind", str(box.proxy.parent), EGRESS_DIR]
        args += _remount(box.hidden)
        args += ["--chdir", str(cwd), "--"]
        if box.proxy_inside is not None and forward:  # the forwarder, which then runs argv
            where = box.proxy_inside
            args += [PYTHON, "-I", "-S", "-c", FORWARDER, "--forward", where, str(PROXY_PORT), "--"]
        return [*args, *argv]


@functools.lru_cache(maxsize=8)
def _remount(hidden: tuple[Path, ...]) -> tuple[str, ...]:
    """An empty place that takes no writes either."""
    return tuple(a for p in _existing([*RUN_DIRS, *hidden]) for a in ("--remount-ro", str(p)))


@functools.lru_cache(maxsize=64)
def _layers(
    hidden_paths: tuple[Path, ...],
    visible: tuple[Path, ...],
    writable: tuple[Path, ...],
    home: Path,
    readonly: tuple[Path, ...],
) -> tuple[str, ...]:
    """Hidden and shown-again paths, shallowest first (a deeper one wins), then the
    writable ones, then the read-only ones inside them (the same for every process of
    a visit: worked out once)."""
    hidden = [*RUN_DIRS, *hidden_paths]
    # a path under no hidden one is visible anyway (each mount costs the process time)
    # (and one under /tmp, which the box replaces: a project kept there is shown too)
    covered = [*hidden, TMP]
    shown = [p for p in [*RUN_KEPT, *visible] if any(_under(p, h) for h in covered)]
    layers = sorted(
        [(p, "--tmpfs") for p in _existing(hidden)] + [(p, "--ro-bind") for p in _existing(shown)],
        key=lambda layer: _depth(layer[0]),
    )
    args: list[str] = []
    for path, op in layers:
        args += [op, str(path)] if op == "--tmpfs" else [op, str(path), str(path)]
    for path in sorted([*writable, home], key=_depth):
        args += ["--bind", str(path), str(path)]
    for path in _existing(readonly):
        args += ["--ro-bind", str(path), str(path)]
    return tuple(args)
