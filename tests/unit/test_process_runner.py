"""The one subprocess runner (`swell.process.run_process`): output, exit codes, the
deadline, cancellation and pipes held by a child that outlives the shell."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from swell import process, sweep

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups")


def sh(script: str, tmp_path: Path, **kwargs: float) -> process.ProcessResult:
    return asyncio.run(process.run_process(["sh", "-c", script], cwd=tmp_path, **kwargs))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def gone(pid: int, timeout: float = 5.0) -> bool:
    """The process ended (a signal sent to it takes a moment to land)."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_output_and_exit_code(tmp_path: Path) -> None:
    result = sh("echo out; echo err >&2; exit 3", tmp_path)
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out and not result.truncated


def test_large_output_is_read_while_the_child_runs_and_capped(tmp_path: Path) -> None:
    # far more than a pipe holds: the child would block if nobody read
    result = sh("head -c 3000000 /dev/zero | tr '\\0' x", tmp_path, max_output=1000)
    assert result.exit_code == 0
    assert result.stdout == "x" * 1000 and result.truncated


def test_the_environment_and_working_directory_are_the_childs(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ONLY": "this"}
    result = asyncio.run(
        process.run_process(["sh", "-c", "pwd; echo $ONLY"], cwd=tmp_path, env=env)
    )
    assert result.stdout.split() == [str(tmp_path), "this"]


def test_a_missing_binary_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        asyncio.run(process.run_process(["no-such-binary-swell"], cwd=tmp_path))


def test_the_deadline_ends_the_whole_group(tmp_path: Path) -> None:
    script = "sleep 30 & echo $! > child; trap '' TERM; sleep 30"
    started = time.monotonic()
    result = sh(script, tmp_path, timeout=0.3, grace=0.2)
    assert result.timed_out and result.exit_code is None
    assert time.monotonic() - started < 10
    child = int((tmp_path / "child").read_text())
    assert gone(child)


def test_a_cancellation_ends_the_group_before_it_returns(tmp_path: Path) -> None:
    async def cancelled() -> None:
        task = asyncio.create_task(
            process.run_process(
                ["sh", "-c", "sleep 30 & echo $! > child; sleep 30"], cwd=tmp_path, grace=0.5
            )
        )
        while not (tmp_path / "child").exists():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert gone(int((tmp_path / "child").read_text()))


def test_a_child_holding_the_pipes_is_ended_after_the_drain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "DRAIN_SECONDS", 0.2)
    started = time.monotonic()
    result = sh("sleep 30 & echo $! > child; echo done", tmp_path)
    assert result.exit_code == 0 and result.stdout == "done\n"
    assert time.monotonic() - started < 10
    assert gone(int((tmp_path / "child").read_text()))


def test_started_children_are_tracked_until_reaped(tmp_path: Path) -> None:
    seen: list[bool] = []

    async def watch() -> None:
        task = asyncio.create_task(process.run_process(["sh", "-c", "sleep 0.2"], cwd=tmp_path))
        await asyncio.sleep(0.05)
        seen.append(bool(sweep._tracked))
        await task

    asyncio.run(watch())
    assert seen == [True]
    assert not sweep._tracked  # the runner reaped it itself


def test_spawns_are_counted(tmp_path: Path) -> None:
    before = process.spawned()
    sh("true", tmp_path)
    assert process.spawned() == before + 1
