"""What of the user's own agent CLI setup enters a sandbox's per-run home
(docs/security.md, "Agent CLI settings and logins").

- The CLI's **settings file** (not a secret: the auth method chosen, models, UI options)
  is copied into the run's home the first time a visit of the run uses that CLI, so the
  CLI behaves as it does for the user; what the CLI writes there stays in the run.
- Its **login file** (an OAuth token a CLI keeps after `claude` / `codex login` /
  `gemini` login) is bound read-only into the run's home, for the agent CLI's processes
  only, and only when none of the adapter's API key variables is set (a key, which
  passes by its name, is then all it needs). Nothing else of the user's HOME enters.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_SETTINGS = 1024 * 1024  # a settings file larger than this is not copied


@dataclass(frozen=True)
class Setup:
    """Where one CLI keeps its files: a directory (a variable that moves it, its place
    under HOME), the settings and login files in it, and its API key variables."""

    variable: str | None
    under_home: str
    settings: tuple[str, ...]
    logins: tuple[str, ...]
    keys: tuple[str, ...]


SETUPS = {
    "claude": Setup(
        "CLAUDE_CONFIG_DIR", ".claude", ("settings.json",), (".credentials.json",),
        ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    ),
    "codex": Setup(
        "CODEX_HOME", ".codex", ("config.toml",), ("auth.json",),
        ("CODEX_API_KEY", "OPENAI_API_KEY"),
    ),
    "gemini": Setup(
        None, ".gemini", ("settings.json",), ("oauth_creds.json", "google_accounts.json"),
        ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"),
    ),
    "opencode": Setup(
        None, ".config/opencode", ("opencode.json", "opencode.jsonc"), (),
        ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"),
    ),
}  # fmt: skip
# opencode keeps its logins in its data directory, apart from its settings
OPENCODE_LOGIN = ".local/share/opencode/auth.json"


def _regular(path: Path) -> bool:
    """A regular file, not a link (a link could name any file of the user's)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _source_dir(setup: Setup, env: Mapping[str, str], home: Path) -> Path:
    moved = env.get(setup.variable) if setup.variable else None
    return Path(moved) if moved else home / setup.under_home


def copy_settings(adapter_type: str, env: Mapping[str, str], home: Path, run_home: Path) -> None:
    """Copy the CLI's settings file(s) into `run_home` unless the run has its own."""
    setup = SETUPS.get(adapter_type)
    if setup is None:
        return
    source = _source_dir(setup, env, home)
    for name in setup.settings:
        found, target = source / name, run_home / setup.under_home / name
        if os.path.lexists(target) or not _regular(found):
            continue
        if found.stat().st_size > MAX_SETTINGS:
            continue
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(found, target)


def logins(
    adapter_type: str, env: Mapping[str, str], home: Path, run_home: Path
) -> Iterator[tuple[Path, Path]]:
    """(the user's login file, where it goes in `run_home`) to bind read-only, when no
    API key of the adapter is set."""
    setup = SETUPS.get(adapter_type)
    if setup is None or any(env.get(key) for key in setup.keys):
        return
    source = _source_dir(setup, env, home)
    places = [(source / name, run_home / setup.under_home / name) for name in setup.logins]
    if adapter_type == "opencode":
        data = env.get("XDG_DATA_HOME")
        found = Path(data) / "opencode/auth.json" if data else home / OPENCODE_LOGIN
        places.append((found, run_home / OPENCODE_LOGIN))
    for found, target in places:
        if _regular(found):
            yield Path(os.path.realpath(found)), target


# login targets in run homes bound by a live box (or a visit's own bwraps), and how
# many hold each; those swell's bwrap made as mount points (see `hold`)
_holders: dict[Path, int] = {}
_lock = threading.Lock()
_made: set[Path] = set()


def _empty_file(path: Path) -> bool:
    try:
        found = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_size == 0


def hold(targets: Iterable[Path]) -> None:
    """A bwrap is about to bind logins at `targets`: where none is there, bwrap makes an
    empty file to mount on, in the run's home; it is removed once nothing holds it
    (`release`). (An empty file there already is one a killed swell left.)"""
    with _lock:
        for target in targets:
            if not _holders.get(target) and (not os.path.lexists(target) or _empty_file(target)):
                _made.add(target)
            _holders[target] = _holders.get(target, 0) + 1


def release(targets: Iterable[Path]) -> None:
    """What `hold` held is no longer bound: remove the empty mount points no box holds
    (not while one does: unlinking a mount point detaches the mount in every namespace)."""
    with _lock:
        for target in targets:
            left = _holders.get(target, 0) - 1
            if left > 0:
                _holders[target] = left
                continue
            _holders.pop(target, None)
            if target in _made and _empty_file(target):
                with contextlib.suppress(OSError):
                    os.unlink(target)
            _made.discard(target)
