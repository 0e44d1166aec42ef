"""Live output with real processes: a running step's output is stored as it arrives,
`logs --follow` streams it and notices a dead run, `status` shows elapsed time, and
`swell run` shows it live on a terminal (a pty), as plain lines, or as NDJSON."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from conftest import start_swell, swell, swell_cmd, swell_json, wait_for, write_pipeline

TICKER = """
kind: WavePipeline
metadata:
  name: ticker
steps:
  - id: tick
    type: command
    script: for i in 1 2 3 4 5 6 7 8; do echo "line $i"; {hold}sleep {pause}; done{after}
"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _ticker(project: Path, pause: float = 0.4, after: str = "", hold: Path | None = None) -> None:
    """The ticker pipeline; with `hold`, it stops after line 2 until that file exists
    (so a test sees it running however loaded the machine is)."""
    wait = ""
    if hold is not None:
        wait = (
            f"[ $i = 2 ] && n=0 && while [ ! -e {hold} ] && [ $n -lt 1200 ]; "
            "do sleep 0.1; n=$((n+1)); done; "
        )
    write_pipeline(project, "ticker", TICKER.format(pause=pause, after=after, hold=wait))


def _first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("run "), line
    return line.split()[1]


def _stored(project: Path, run_id: str, text: str) -> bool:
    shown = swell("logs", run_id, "--step", "tick", cwd=project)
    return text in shown.stdout


def test_follow_sees_lines_before_the_step_ends_and_status_shows_elapsed(project: Path) -> None:
    release = project.parent / "release"
    _ticker(project, hold=release)
    run = start_swell("run", "ticker", cwd=project)
    run_id = _first_line(run)
    follow = subprocess.Popen(
        swell_cmd("logs", run_id, "--follow", "--step", "tick"),
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert follow.stdout is not None
    seen = []
    while "    | line 2\n" not in seen:
        seen.append(follow.stdout.readline())
        assert seen[-1], seen
    # the step is still running: later lines are yet to come
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "running"
    running = [s for s in status["steps"] if s["status"] == "running"]
    assert running and running[0]["elapsed_ms"] >= 400
    text = swell("status", run_id, cwd=project).stdout
    assert re.search(r"tick\s+1 visits\s+last: running\s+for \d+\.\ds", text), text
    release.touch()
    rest, _ = follow.communicate(timeout=30)
    assert follow.returncode == 0
    assert "    | line 8" in rest and "✓ tick" in rest
    run.communicate(timeout=30)
    assert run.returncode == 0
    finished = swell_json("status", run_id, cwd=project)
    assert all(s["elapsed_ms"] is None for s in finished["steps"])


def test_a_cancelled_visit_keeps_its_partial_output(project: Path) -> None:
    _ticker(project, after="; sleep 600")
    run = start_swell("run", "ticker", cwd=project)
    run_id = _first_line(run)
    wait_for(lambda: _stored(project, run_id, "line 2"))
    assert swell("cancel", run_id, cwd=project).returncode == 0
    run.communicate(timeout=30)
    shown = swell("logs", run_id, "--step", "tick", cwd=project).stdout
    assert "    | line 1\n    | line 2\n" in shown
    assert "interrupted" in shown or "cancel" in shown


def test_kill_9_keeps_flushed_output_and_follow_ends(project: Path) -> None:
    _ticker(project, pause=0.3, after="; sleep 600")
    run = start_swell("run", "ticker", cwd=project)
    run_id = _first_line(run)
    wait_for(lambda: _stored(project, run_id, "line 3"))
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=10)
    try:
        shown = swell("logs", run_id, "--step", "tick", cwd=project).stdout
        assert "    | line 1\n    | line 2\n    | line 3\n" in shown
        started = time.monotonic()
        follow = swell("logs", run_id, "--follow", cwd=project, timeout=30)
        assert follow.returncode == 1
        assert f"no process is executing run {run_id} any more" in follow.stderr
        assert f"swell resume {run_id}" in follow.stderr
        assert "Traceback" not in follow.stderr
        assert time.monotonic() - started < 10
        assert "    tick | line 3" in follow.stdout
    finally:  # the killed swell's step is still sleeping: end it
        swell("cancel", run_id, "--force", "--grace", "1", cwd=project)


def test_plain_lines_when_not_a_terminal(project: Path) -> None:
    _ticker(project, pause=0.1)
    result = swell("run", "ticker", cwd=project)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("▶ tick")
    assert [ln for ln in lines if ln.startswith("    tick | ")] == [
        f"    tick | line {i}" for i in range(1, 9)
    ]
    assert lines[-2].startswith("✓ tick") and lines[-1].startswith("run succeeded")


def test_fast_steps_print_as_before(project: Path) -> None:
    result = swell("run", "loop", "--input", "x", cwd=project)
    assert result.returncode == 0
    assert " | " not in result.stdout  # nothing of a quick visit is stored or repeated


def test_json_output_is_ndjson_with_output_chunks(project: Path) -> None:
    _ticker(project, pause=0.1)
    result = swell("run", "ticker", "-o", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    chunks = [o for o in objects if o["type"] == "output"]
    events = [o for o in objects if o["type"] != "output"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert "".join(c["text"] for c in chunks) == "".join(f"line {i}\n" for i in range(1, 9))
    assert {(c["step_id"], c["visit"], c["stream"]) for c in chunks} == {("tick", 1, "stdout")}
    assert [c["seq"] for c in chunks] == list(range(1, len(chunks) + 1))


def _read_until(fd: int, pattern: re.Pattern[str], timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            seen += ANSI.sub("", data.decode(errors="replace"))
            if pattern.search(seen):
                return seen
    raise AssertionError(f"{pattern.pattern!r} not seen in:\n{seen}")


def test_live_display_on_a_terminal(project: Path) -> None:
    _ticker(project, pause=0.5)
    main, secondary = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
    proc = subprocess.Popen(
        swell_cmd("run", "ticker"),
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    try:
        # while the step runs: its name with the elapsed time, and its last line
        seen = _read_until(main, re.compile(r"▶ tick\s+\d+\.\ds[\s\S]*line 3"), 30)
        assert proc.poll() is None, seen
        seen += _read_until(main, re.compile(r"run succeeded"), 30)
    finally:
        proc.wait(timeout=30)
        os.close(main)
    assert proc.returncode == 0
    assert "✓ tick" in seen
