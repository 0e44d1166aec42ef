"""The sandbox every process of a visit runs in (`runtime.sandbox`; docs/security.md).

`Box` says what a visit's processes may see and write; a backend (`bubblewrap.Bubblewrap`,
`docker.Docker`) turns it into the argv that starts a process inside it; `confined_env` is the environment
they get; `settings` reads wave.yaml and picks the backend. The engine makes a box current
for a visit (`confining`, `enter`), and the one subprocess runner (`swell.process`) wraps
every process it starts while one is current (`confine`), or starts it in the visit's
long-lived box (`start_boxed`, sandbox/boxes.py; an agent CLI's through
sandbox/streams.py). This module imports only what
the runner needs (the backends and settings are imported where they are used).
"""

from __future__ import annotations

from swell.sandbox.active import (
    Confinement,
    confine,
    confining,
    current,
    enter,
    read_only_agent,
    scratch_root,
    start_boxed,
)
from swell.sandbox.base import Backend, Box, Unavailable
from swell.sandbox.env import CURATED, confined_env

__all__ = [
    "CURATED",
    "Backend",
    "Box",
    "Confinement",
    "Unavailable",
    "confine",
    "confined_env",
    "confining",
    "current",
    "enter",
    "read_only_agent",
    "scratch_root",
    "start_boxed",
]
