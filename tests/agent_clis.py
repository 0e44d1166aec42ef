"""Where the real agent CLIs are, and the pytest marker that needs them.

`scripts/install-agent-clis.sh` installs the pinned CLIs into
`$SWELL_AGENT_CLIS` (default ~/.cache/swell/agent-clis). Tests marked
`agent_cli` skip when a CLI is missing, unless SWELL_REQUIRE_AGENT_CLIS=1 (set by
CI), which turns a missing CLI into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def cli_dir() -> Path:
    return Path(os.environ.get("SWELL_AGENT_CLIS", Path.home() / ".cache" / "swell" / "agent-clis"))


def cli_path(name: str) -> Path:
    """The installed CLI binary `name` (claude, codex, opencode, gemini), or skip/fail."""
    path = cli_dir() / "node_modules" / ".bin" / name
    if path.exists():
        return path
    message = (
        f"agent CLI '{name}' is not installed in {cli_dir()} (run scripts/install-agent-clis.sh)"
    )
    if os.environ.get("SWELL_REQUIRE_AGENT_CLIS") == "1":
        pytest.fail(message)
    pytest.skip(message)
