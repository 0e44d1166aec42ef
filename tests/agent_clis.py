"""Where the real agent CLIs are, and the helpers the adapter tests share.

`scripts/install-agent-clis.sh` installs the pinned CLIs into
`$SWELL_AGENT_CLIS` (default ~/.cache/swell/agent-clis). Tests marked
`agent_cli` skip when a CLI is missing, unless SWELL_REQUIRE_AGENT_CLIS=1 (set by
CI), which turns a missing CLI into a failure.

The helpers drive an adapter to its end, stand in a fake CLI binary, and look for
the processes a visit left behind.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from swell.adapters.base import AgentAdapter, AgentEvent, AgentFinished, AgentRequest, AgentResult


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


def drive(adapter: AgentAdapter, req: AgentRequest) -> tuple[list[AgentEvent], AgentResult]:
    """Run one visit to its end: the events, the last and only one AgentFinished."""

    async def collect() -> list[AgentEvent]:
        return [event async for event in adapter.run(req)]

    events = asyncio.run(collect())
    assert isinstance(events[-1], AgentFinished)
    assert not any(isinstance(e, AgentFinished) for e in events[:-1])
    return events, events[-1].result


def procs_under(path: Path) -> list[str]:
    """Processes whose working directory is inside `path` (the agent and its tools)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cwd == str(path) or cwd.startswith(f"{path}/"):
            found.append(f"{entry.name}: {cmd[:120]}")
    return found


def settled(check: Any, timeout: float = 5.0) -> Any:
    """`check()` once it is falsy, or its last value when `timeout` runs out."""
    deadline = time.monotonic() + timeout
    while (value := check()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return value


def fake_binary(tmp_path: Path, script: str, *, name: str) -> Path:
    """An executable `tmp_path/name` that runs `script` under /bin/sh."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path
