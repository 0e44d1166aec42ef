"""What a sandboxed visit may see (`Box`) and the one method a backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from swell.errors import SwellError

PROXY_PORT = 3128  # where the forwarder listens inside a sandbox (its own loopback)
# where the directory of the egress proxies' sockets (one per visit, in a directory per
# run and allow-list: sandbox/proxy.py) is bound inside, read-only
EGRESS_DIR = "/run/swell-egress"


class Unavailable(SwellError):
    """The sandbox the manifest asks for cannot run here; the message says how to fix it."""


@dataclass(frozen=True)
class Box:
    """The file system and environment of one visit's processes.

    Everything is read-only except `writable` (the workspace first) and `home`; `hidden`
    paths are replaced by empty directories, then `visible` paths are shown again
    (read-only), then `readonly` paths inside a writable one are made read-only again
    (a `mode: readonly` mount). /tmp is the box's own: private to a process tree with a
    bwrap of its own, shared by the visits of a long-lived box (sandbox/boxes.py)."""

    writable: tuple[Path, ...]  # the workspace, then other paths the visit writes
    home: Path  # the per-run HOME (under the run's directory), writable
    hidden: tuple[Path, ...] = ()  # the user's HOME, swell's state directory, the store
    visible: tuple[Path, ...] = ()  # shown read-only although under a hidden path
    readonly: tuple[Path, ...] = ()  # read-only although under a writable path
    # writable again although under a read-only one: Wave's `.agents/` in a read-only
    # mount, where a step running in the mount writes its outputs
    rewritable: tuple[Path, ...] = ()
    env_passthrough: tuple[str, ...] = ()  # wave.yaml's `runtime.sandbox.env_passthrough`
    network: bool = True  # False: a network namespace of its own, with no route out
    # the egress proxy's unix socket (implies no network): its directory is bound at
    # EGRESS_DIR, and a forwarder on the box's loopback (127.0.0.1:PROXY_PORT for a
    # process with a bwrap of its own), which HTTP(S)_PROXY name, reaches it
    proxy: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)  # set inside, after the rest
    tmp_size: int | None = None  # bytes the private /tmp (a tmpfs) may hold
    # (a login file of the user's, its place in `home`): bound read-only for the agent
    # CLI's processes only (sandbox/logins.py)
    logins: tuple[tuple[Path, Path], ...] = ()

    @property
    def workspace(self) -> Path:
        return self.writable[0]

    @property
    def proxy_inside(self) -> str | None:
        """Where the egress proxy's socket is inside the box."""
        return None if self.proxy is None else f"{EGRESS_DIR}/{self.proxy.name}"


class Backend(Protocol):
    """A way to run a process inside a `Box`."""

    name: str

    def problem(self) -> str | None:
        """Why this backend cannot run here, with the fix; None when it can."""
        ...

    def wrap(self, argv: Sequence[str], cwd: Path, box: Box, forward: bool = True) -> list[str]:
        """The argv that runs `argv` in `cwd` inside `box` (the environment is the
        process's own: see `confined_env`); `forward`: behind a forwarder to the box's
        egress proxy, if it has one (a long-lived box's server forwards for each process
        itself)."""
        ...
