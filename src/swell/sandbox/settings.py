"""Whether a run is sandboxed, and by which backend (`runtime.sandbox`, as Wave reads it:
`backend` wins over `enabled`; `enabled: true` alone means bubblewrap)."""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass
from typing import Literal

from swell.manifest.wave_models import SandboxConfig
from swell.sandbox.base import Backend, Unavailable
from swell.sandbox.bubblewrap import Bubblewrap

BackendName = Literal["bubblewrap", "docker"]
DOCKER_SOCKET = "/var/run/docker.sock"


@dataclass(frozen=True)
class Settings:
    backend: BackendName
    env_passthrough: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    docker_image: str | None = None
    pids_limit: int = 1024
    tmp_size_mb: int = 1024


def settings_of(config: SandboxConfig | None) -> Settings | None:
    """The sandbox `runtime.sandbox` asks for, or None (off)."""
    if config is None:
        return None
    backend = config.backend or ("bubblewrap" if config.enabled else "none")
    if backend == "none":
        return None
    return Settings(
        backend=backend,
        env_passthrough=tuple(config.env_passthrough),
        allowed_domains=tuple(config.default_allowed_domains),
        docker_image=config.docker_image,
        pids_limit=config.pids_limit,
        tmp_size_mb=config.tmp_size_mb,
    )


def _docker_reachable() -> str | None:
    """Why no Docker daemon answers here, or None when one does."""
    host = os.environ.get("DOCKER_HOST", f"unix://{DOCKER_SOCKET}")
    if not host.startswith("unix://"):
        return None  # a remote daemon: trusted to be there
    path = host.removeprefix("unix://")
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(2)
            sock.connect(path)
    except OSError as exc:
        return f"no Docker daemon answers at {path} ({exc.strerror or exc})"
    return None


@functools.lru_cache(maxsize=4)
def backend_for(settings: Settings) -> Backend:
    """The backend `settings` names, able to run here; Unavailable (saying how to fix
    it) otherwise."""
    if settings.backend == "docker":
        why = _docker_reachable()
        fix = "set runtime.sandbox.backend: bubblewrap, or run with --no-sandbox"
        if why:
            raise Unavailable(
                f"runtime.sandbox.backend is docker, but {why}: start Docker, or {fix}"
            )
        raise Unavailable(f"swell does not run the docker sandbox backend yet: {fix}")
    wrap = Bubblewrap()
    problem = wrap.problem()
    if problem:
        raise Unavailable(f"{problem}; or run with --no-sandbox (unsafe)")
    return wrap
