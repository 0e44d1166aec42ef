"""The docker backend (`runtime.sandbox.backend: docker`, `docker_image`): each process
of a visit runs as `docker run` of the image, through the `docker` CLI.

The same `Box` as bubblewrap's (docs/security.md, "Docker backend"): the image's root
read-only (`--read-only`); the workspace, the other writable paths and the run's home
the only writable mounts, each at its own path; the project and the other shown paths
read-only; nothing else of the host (the image is the root: the user's HOME, swell's
state directory and the store are not there, and where a mount lies below one of them,
it is an empty read-only tmpfs). `--network none`, and with an
allow-list the egress proxies' directory bound read-only at EGRESS_DIR and a forwarder
(the image's `python3`) on the container's loopback. The environment is the process's
own (`-e NAME` for each name: the values stay out of the argv); swell's user and group
(`--user`), no capabilities, no new privileges, a pids limit and a sized /tmp. The
container is named, so it is removed with the visit (`docker rm -f`), whatever became
of the `docker run` client, and labelled with its run (`swell.run=RUN`), so `swell
resume` and `swell clean` remove what a killed swell left (`remove_runs`).
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from swell.sandbox.base import EGRESS_DIR, PROXY_PORT, Box
from swell.sandbox.bubblewrap import FORWARDER

INFO_TIMEOUT = 20.0  # seconds `docker info` (or `ps`, `rm`) may take to answer
LABEL = "swell.run"  # each container's label: the run it is of (see `remove_runs`)
# what the docker CLI itself reads from the environment (kept for the client, never
# passed into the container)
CLIENT_ENV = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH",
              "DOCKER_TLS_VERIFY", "PATH")  # fmt: skip
_names = itertools.count(1)


@functools.lru_cache(maxsize=4)
def _info(binary: str) -> str | None:
    """Why `docker info` fails here, or None when a daemon answers."""
    try:
        done = subprocess.run(
            [binary, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            timeout=INFO_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker info` does not answer ({exc})"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"no Docker daemon answers `docker info` ({said[-1] if said else done.returncode})"
    return None


class Docker:
    """`Backend` over the docker CLI."""

    name = "docker"

    def __init__(self, image: str | None, pids_limit: int, path: str | None = None) -> None:
        self.binary = shutil.which("docker", path=path) or ""
        self.image = image
        self.pids_limit = pids_limit

    def problem(self) -> str | None:
        if not self.binary:
            return "runtime.sandbox.backend is docker, but the docker CLI is not on PATH"
        found = _info(self.binary)
        if found is not None:
            return f"runtime.sandbox.backend is docker, but {found}"
        if not self.image:
            return "runtime.sandbox.backend is docker, but runtime.sandbox.docker_image is not set"
        return None

    def wrap(self, argv: Sequence[str], cwd: Path, box: Box, forward: bool = True) -> list[str]:
        """`docker run` of `argv` without an environment (see `run`)."""
        return self.run(argv, cwd, box, {}, f"swell-{os.getpid()}-{next(_names)}", "")[0]

    def run(
        self,
        argv: Sequence[str],
        cwd: Path,
        box: Box,
        env: Mapping[str, str],
        name: str,
        run: str,
    ) -> tuple[list[str], dict[str, str]]:
        """(the `docker run` argv, the docker client's environment) that run `argv` in
        `cwd` inside `box` with `env`, as container `name` of run `run`."""
        args = [self.binary, "run", "--rm", "-i", "--name", name, "--label", f"{LABEL}={run}"]
        args += ["--read-only", "--network", "none", "--user", f"{os.getuid()}:{os.getgid()}"]
        args += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
        args += ["--pids-limit", str(self.pids_limit)]
        size = f",size={box.tmp_size}" if box.tmp_size is not None else ""
        args += ["--tmpfs", f"/tmp:rw,exec,nosuid,nodev{size}"]
        for path in box.hidden:  # an empty read-only place (a mount point's parent in a
            # writable /tmp would otherwise take writes, if only into the container's /tmp)
            args += ["--tmpfs", f"{path}:ro,size=4k"]
        for path in (*box.writable, box.home):
            args += ["-v", f"{path}:{path}:rw"]
        for path in (*box.visible, *box.readonly):
            if os.path.lexists(path):
                args += ["-v", f"{path}:{path}:ro"]
        for path in box.rewritable:  # deeper than its read-only mount: docker binds it after
            args += ["-v", f"{path}:{path}:rw"]
        for source, target in box.logins:
            args += ["-v", f"{source}:{target}:ro"]
        if box.proxy is not None:
            args += ["-v", f"{box.proxy.parent}:{EGRESS_DIR}:ro"]
        args += ["-w", str(cwd)]
        for variable in env:
            args += ["-e", variable]
        args += [self.image or "", *_forwarder(box), *argv]
        client = {k: v for k, v in os.environ.items() if k in CLIENT_ENV}
        return args, {**client, **env}  # `-e NAME` takes its value from here

    def remove(self, names: Sequence[str]) -> None:
        """Remove the containers `names` (the visit is over: what runs there ends)."""
        if names:
            subprocess.Popen(
                [self.binary, "rm", "-f", *names],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )


def remove_runs(binary: str, runs: Sequence[str]) -> list[str]:
    """Remove the containers labelled `swell.run=RUN` for each of `runs` (those a killed
    swell left: a container is the daemon's, not its `docker run` client's, and outlives
    both); returns their ids. Nothing when the daemon does not answer."""
    found: list[str] = []
    for run in runs:
        listed = _docker(binary, "ps", "-a", "-q", "--filter", f"label={LABEL}={run}")
        found += listed.split() if listed is not None else []
    if found:
        _docker(binary, "rm", "-f", *found)
    return found


def _docker(binary: str, *args: str) -> str | None:
    """What `docker ARGS` printed, or None when it failed."""
    try:
        done = subprocess.run(
            [binary, *args],
            capture_output=True,
            text=True,
            timeout=INFO_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _forwarder(box: Box) -> list[str]:
    """The forwarder to the box's egress proxy, on the image's python3, if it has one."""
    if box.proxy_inside is None:
        return []
    where = box.proxy_inside
    return ["python3", "-I", "-S", "-c", FORWARDER, "--forward", where, str(PROXY_PORT), "--"]
