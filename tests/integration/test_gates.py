"""Gates across processes: approval from a second process, the CLI's errors, a waiting run
that outlives its process, the terminal prompt. Decisions, choices, timers and timeouts
are tested in process in tests/engine/test_gate_decisions.py."""

from __future__ import annotations

import signal
from pathlib import Path

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for


def _waiting_gate(project: Path, run_id: str) -> dict[str, object] | None:
    status = swell_json("status", run_id, cwd=project)
    gates = status["waiting_gates"]
    return gates[0] if gates else None


def _started(proc: object) -> str:
    line = proc.stdout.readline()  # type: ignore[attr-defined]
    return run_id_of(line)


def test_gate_approved_from_a_second_process(project: Path) -> None:
    proc = start_swell("run", "review", "--input", "v2", cwd=project)
    run_id = _started(proc)
    gate = wait_for(lambda: _waiting_gate(project, run_id))
    assert gate["step_id"] == "approve" and gate["message"] == "Ship the change for v2?"
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting"

    approved = swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
    assert approved.returncode == 0, approved.stderr
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    resolved = [e for e in events(project, run_id) if e["type"] == "gate.resolved"]
    assert (
        len(resolved) == 1
        and resolved[0]["decision"] == "approved"
        and resolved[0]["choice"] == "ship"
    )
    assert [s["step_id"] for s in swell_json("status", run_id, cwd=project)["steps"]] == [
        "prepare",
        "approve",
        "ship",
    ]


def test_unknown_choice_and_missing_gate_are_clear_errors(project: Path) -> None:
    proc = start_swell("run", "review", cwd=project)
    run_id = _started(proc)
    wait_for(lambda: _waiting_gate(project, run_id))
    bad = swell("approve", run_id, "--choice", "yolo", cwd=project)
    assert bad.returncode == 1 and "'yolo' is not a choice" in bad.stderr and "ship" in bad.stderr
    assert swell("approve", run_id, "--choice", "ship", cwd=project).returncode == 0
    proc.communicate(timeout=60)
    again = swell("approve", run_id, cwd=project)
    assert again.returncode == 1 and "no gate is waiting" in again.stderr


def test_waiting_run_outlives_its_process_and_resumes(project: Path) -> None:
    proc = start_swell("run", "review", "--input", "v3", cwd=project)
    run_id = _started(proc)
    wait_for(lambda: _waiting_gate(project, run_id))
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 3, out
    assert "waiting at a gate" in out
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting"

    approved = swell("approve", run_id, "--choice", "ship", cwd=project)
    assert "swell resume" in approved.stdout
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    evs = events(project, run_id)
    assert [e["type"] for e in evs].count("gate.waiting") == 1
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


def test_terminal_prompt_approves_a_gate(project: Path) -> None:
    """On a terminal, `swell run` asks at the gate; the answer routes the run."""
    import os
    import pty
    import select
    import subprocess
    import sys

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "swell", "run", "review", "--input", "tty"],
        cwd=project,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
    )
    os.close(follower)
    seen = b""

    def read_until(token: bytes, timeout: float = 30) -> None:
        nonlocal seen
        import time

        deadline = time.monotonic() + timeout
        while token not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(leader, 4096)
                except OSError:
                    break
        assert token in seen, seen.decode(errors="replace")

    read_until(b"approve? [ship/rework/drop]")
    os.write(leader, b"ship\n")
    read_until(b"run succeeded")
    assert proc.wait(timeout=30) == 0
    os.close(leader)
    assert b"gate approve approved (ship) by terminal" in seen
