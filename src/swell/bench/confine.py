"""The sandbox a task's grading runs in, where the project configures one
(`runtime.sandbox`, docs/security.md): the grading checkout writable, a HOME of its
own, no network, and not the user's HOME, swell's state directory or the store, as
a sandboxed visit's processes see it. The tests are the dataset's code, run on the
pipeline's change: both are untrusted."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from swell import sandbox
from swell.manifest.loader import Project
from swell.sandbox.paths import hidden_paths, path_entries_under, real
from swell.sandbox.settings import backend_for, settings_of

Confine = Callable[[Path], sandbox.Confinement]


def grading_sandbox(project: Project, state_dir: Path, no_sandbox: bool) -> Confine | None:
    """How to confine a grading checkout's processes, or None (no sandbox configured,
    or `--no-sandbox`); Unavailable when the backend cannot run here."""
    chosen = None if no_sandbox else settings_of(project.manifest.runtime.sandbox)
    if chosen is None:
        return None
    backend = backend_for(chosen)
    hidden = hidden_paths(state_dir, real(project.root), project.manifest.runtime.store)
    visible = path_entries_under(hidden, os.environ.get("PATH", ""))
    # the Python the default test command runs (a venv's, and the one it links to),
    # when it lives under a hidden path
    for where in (sys.prefix, sys.base_prefix, Path(sys.executable).resolve().parent.parent):
        python = real(Path(where))
        if any(python.is_relative_to(h) for h in hidden) and python not in visible:
            visible.append(python)

    def confine(checkout: Path) -> sandbox.Confinement:
        home = checkout.parent / "home"
        home.mkdir(mode=0o700, exist_ok=True)
        box = sandbox.Box(
            writable=(real(checkout),),
            home=real(home),
            hidden=tuple(hidden),
            visible=tuple(visible),
            env_passthrough=chosen.env_passthrough,
            network=False,
        )
        return sandbox.Confinement(backend, box)

    return confine
