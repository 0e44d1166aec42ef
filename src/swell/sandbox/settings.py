"""Whether a run is sandboxed, and by which backend (`runtime.sandbox`, as Wave reads it:
`backend` wins over `enabled`; `enabled: true` alone means bubblewrap)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from swell.manifest.wave_models import SandboxConfig
from swell.sandbox.base import Backend, Unavailable
from swell.sandbox.bubblewrap import Bubblewrap
from swell.sandbox.docker import Docker, remove_runs

BackendName = Literal["bubblewrap", "docker"]


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


@functools.lru_cache(maxsize=4)
def backend_for(settings: Settings) -> Backend:
    """The backend `settings` names, able to run here; Unavailable (saying how to fix
    it) otherwise."""
    if settings.backend == "docker":
        docker = Docker(settings.docker_image, settings.pids_limit)
        why = docker.problem()
        if why:
            fix = "set runtime.sandbox.backend: bubblewrap, or run with --no-sandbox"
            start = "start Docker, or " if "daemon" in why else "set docker_image, or "
            raise Unavailable(f"{why}: {start if docker.binary else ''}{fix}")
        return docker
    wrap = Bubblewrap()
    problem = wrap.problem()
    if problem:
        raise Unavailable(f"{problem}; or run with --no-sandbox (unsafe)")
    return wrap


def remove_containers(config: SandboxConfig | None, runs: Sequence[str]) -> list[str]:
    """The containers of `runs` a killed swell left, removed (`docker.remove_runs`),
    when `runtime.sandbox` is docker; their ids."""
    chosen = settings_of(config)
    if chosen is None or chosen.backend != "docker" or not runs:
        return []
    binary = Docker(chosen.docker_image, chosen.pids_limit).binary
    return remove_runs(binary, runs) if binary else []
