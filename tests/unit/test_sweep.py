"""Finding what a visit left behind (`swell.sweep`): while swell adopts orphans (a
child subreaper), a process that left its parent and group stays swell's descendant,
so a sweep of swell's own processes finds it by its markers without reading the rest
of /proc; ended adopted processes are reaped."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from swell import process, sweep

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _escape(tmp_path: Path, marker: str) -> int:
    """Start a process that leaves its parent and its group (setsid in the background
    of a shell that exits); returns its pid once it runs."""
    env = {"PATH": os.environ["PATH"], "SWELL_TEST_MARK": marker}
    script = (
        "setsid sh -c 'echo $$ > orphan.tmp; mv orphan.tmp orphan; exec sleep 30' >/dev/null 2>&1 &"
    )
    result = asyncio.run(process.run_process(["sh", "-c", script], cwd=tmp_path, env=env))
    assert result.exit_code == 0
    deadline = time.monotonic() + 10
    while not (tmp_path / "orphan").exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return int((tmp_path / "orphan").read_text())


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_an_orphan_is_adopted_and_found_among_swells_own(tmp_path: Path) -> None:
    marker = f"SWELL_TEST_MARK=adopted-{os.getpid()}"
    with sweep.adopting() as adopted:
        if not adopted:
            pytest.skip("this kernel does not let a process adopt orphans")
        orphan = _escape(tmp_path, marker.split("=", 1)[1])
        deadline = time.monotonic() + 10
        while _parent(orphan) != os.getpid():  # re-parented once its parent is gone
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert orphan in sweep.descendants()
        found = sweep.find_marked([marker], mine=True)
        assert [m.pid for m in found] == [orphan]
        stopped = asyncio.run(sweep.stop_marked([marker], grace=1.0, mine=True))
        assert [m.pid for m in stopped] == [orphan]
        # ended and reaped: neither running nor left as a zombie of this process
        assert not Path(f"/proc/{orphan}").exists()
    assert not sweep.is_adopting()


def test_without_adopting_a_sweep_of_mine_looks_everywhere(tmp_path: Path) -> None:
    marker = f"SWELL_TEST_MARK=everywhere-{os.getpid()}"
    orphan = _escape(tmp_path, marker.split("=", 1)[1])
    try:
        assert [m.pid for m in sweep.find_marked([marker], mine=True)] == [orphan]
    finally:
        asyncio.run(sweep.stop_marked([marker], grace=1.0))
    assert sweep.find_marked([marker]) == []


def test_a_sweep_with_nothing_below_finds_nothing_quickly() -> None:
    with sweep.adopting():
        assert asyncio.run(sweep.stop_marked(["SWELL_TEST_MARK=none"], mine=True)) == []


def test_adopting_nests() -> None:
    with sweep.adopting() as outer:
        with sweep.adopting():
            assert sweep.is_adopting() == outer
        assert sweep.is_adopting() == outer
    assert not sweep.is_adopting()


def test_tracked_children_are_never_reaped_by_the_sweep(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.Popen(["sh", "-c", "exit 7"], start_new_session=True)
    sweep.track(proc.pid)
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sweep.reap_adopted()
        assert proc.wait() == 7  # its own waiter still gets the exit status
    finally:
        sweep.untrack(proc.pid)


def test_an_ended_orphan_in_another_session_is_reaped(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.Popen(["sh", "-c", "exit 0"], start_new_session=True)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert sweep.reap_adopted() >= 1
    assert not Path(f"/proc/{proc.pid}").exists()
    proc.returncode = 0  # reaped above; keep Popen's own clean-up quiet


def test_whether_swell_has_a_child_is_asked_without_reaping_it() -> None:
    """The sweep's quick answer (`_has_children`): a running child and an ended one not
    yet waited for both count; asking reaps nothing (the child's owner still waits)."""
    import subprocess

    code = (
        "import subprocess, time\n"
        "from swell.sweep import _has_children\n"
        "seen = [_has_children()]\n"
        "child = subprocess.Popen(['sleep', '0.2'])\n"
        "seen.append(_has_children())\n"
        "time.sleep(1)\n"  # ended, a zombie until waited for
        "seen.append(_has_children())\n"
        "seen.append(child.wait())\n"  # still ours to reap: its exit status is there
        "seen.append(_has_children())\n"
        "print(seen)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[False, True, True, 0, False]"
