"""`off_loop`: work in a daemon thread, off the event loop (workspace/offload.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from swell.workspace.offload import off_loop


def _name() -> tuple[str, bool]:
    thread = threading.current_thread()
    return thread.name, thread.daemon


def test_results_and_errors_come_back_from_a_daemon_thread() -> None:
    async def main() -> tuple[str, bool]:
        with pytest.raises(ValueError, match="broken"):
            await off_loop(lambda: int("broken"))
        return await off_loop(_name, "swell-mount")

    name, daemon = asyncio.run(main())
    assert (name, daemon) == ("swell-mount", True)


def test_a_call_that_finds_every_thread_busy_gets_its_own() -> None:
    """A slow read (a huge file) does not hold up the next visit's work."""
    release = threading.Event()

    async def main() -> str:
        slow = asyncio.ensure_future(off_loop(lambda: release.wait(60)))
        try:
            return await off_loop(lambda: "quick")
        finally:
            release.set()
            await slow

    assert asyncio.run(main()) == "quick"


def test_a_cancelled_caller_returns_while_its_work_goes_on() -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def work() -> None:
        started.set()
        release.wait(60)
        finished.set()

    async def main() -> None:
        task = asyncio.ensure_future(off_loop(work))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert not finished.is_set()  # the caller did not wait for it
    release.set()
    assert finished.wait(60)
