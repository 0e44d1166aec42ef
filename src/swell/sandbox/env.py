"""The environment of a sandboxed process: Wave's curated set, `env_passthrough`, what
swell itself set for the visit, nothing else (docs/security.md, "Environment")."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from swell.sandbox.base import Box

# what Wave keeps for its command steps (executor_steps.go filterEnvPassthrough) and
# adapters (adapter/environment.go BuildCuratedEnvironment: TERM)
CURATED = (
    "PATH", "HOME", "USER", "TMPDIR", "TERM",
    "GOPATH", "GOMODCACHE", "GOCACHE", "GOROOT",
    "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
)  # fmt: skip
# paths that name a place to keep files: dropped when hidden (the tool then uses its
# default under the run's home); the last three move an agent CLI's config directory
_PATHS = (
    "GOPATH", "GOMODCACHE", "GOCACHE", "GOROOT", *CURATED[-3:],
    "CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME",
)  # fmt: skip


def _matcher(names: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Exact names and prefixes (a name ending in `*`)."""
    listed = list(names)
    exact = frozenset(n for n in listed if not n.endswith("*"))
    return exact, tuple(n[:-1] for n in listed if n.endswith("*"))


def _under(path: str, roots: Iterable[Path]) -> bool:
    return any(path == str(r) or path.startswith(f"{r}{os.sep}") for r in roots)


def confined_env(
    env: Mapping[str, str],
    box: Box,
    inherit: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`env` as the sandbox lets it in.

    A variable swell's own environment passes on unchanged (`environ`, default
    os.environ) stays only if it is in CURATED, in `box.env_passthrough` or in `inherit`
    (an adapter's own names: its API key and base URL); a variable swell set or changed
    for the visit (SWELL_*, a script's values, an adapter's settings) stays. HOME is the
    box's home, TMPDIR /tmp, and a curated path inside a hidden directory is dropped (the
    tool then uses its default under HOME)."""
    environ = os.environ if environ is None else environ
    exact, prefixes = _matcher((*CURATED, *box.env_passthrough, *inherit))
    kept = {
        name: value
        for name, value in env.items()
        if name in exact or name.startswith(prefixes) or environ.get(name) != value
    }
    for name in _PATHS:
        if name in kept and _under(kept[name], box.hidden):
            del kept[name]
    kept["HOME"] = str(box.home)
    kept["TMPDIR"] = "/tmp"
    return {**kept, **box.extra_env}
