"""What the app holds while it serves: settings, the store, the guard, templates."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.requests import Request

from swell.web.data import Reader
from swell.web.offload import Offload
from swell.web.security import Guard


@dataclass(frozen=True)
class ServeSettings:
    """How `swell serve` was asked to run."""

    root: Path  # the project root; its store is the one `swell list` reads
    bind: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    start_token: str | None = None  # starts runs when `token` is not set (web/security.py)


@dataclass
class AppState:
    settings: ServeSettings
    reader: Reader
    guard: Guard
    templates: Any  # jinja2 Environment (typed loosely: jinja2 is an optional extra)
    extra: dict[str, Any] = field(default_factory=dict)
    offload: Offload = field(default_factory=Offload)  # long work, off the event loop


def new_csrf() -> str:
    return secrets.token_urlsafe(32)


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.swell
    return state
