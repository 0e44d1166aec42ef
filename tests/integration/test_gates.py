"""Gates across processes: a run without a terminal stops at a gate (exit 3) or, with
`--wait`, waits for approval from a second process; the CLI's errors, a waiting run
that outlives its process, the terminal prompt and its default. Decisions, choices,
timers and timeouts are tested in process in tests/engine/test_gate_decisions.py."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline


def _waiting_gate(project: Path, run_id: str) -> dict[str, object] | None:
    status = swell_json("status", run_id, cwd=project)
    gates = status["waiting_gates"]
    return gates[0] if gates else None


def _started(proc: object) -> str:
    line = proc.stdout.readline()  # type: ignore[attr-defined]
    return run_id_of(line)


def test_gate_approved_from_a_second_process(project: Path) -> None:
    """`--wait`: a run without a terminal waits at its gate until a decision comes."""
    proc = start_swell("run", "review", "--input", "v2", "--wait", cwd=project)
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
    proc = start_swell("run", "review", "--wait", cwd=project)
    run_id = _started(proc)
    wait_for(lambda: _waiting_gate(project, run_id))
    bad = swell("approve", run_id, "--choice", "yolo", cwd=project)
    assert bad.returncode == 1 and "'yolo' is not a choice" in bad.stderr and "ship" in bad.stderr
    assert swell("approve", run_id, "--choice", "ship", cwd=project).returncode == 0
    proc.communicate(timeout=60)
    again = swell("approve", run_id, cwd=project)
    assert again.returncode == 1 and "no gate is waiting" in again.stderr


def test_waiting_run_outlives_its_process_and_resumes(project: Path) -> None:
    proc = start_swell("run", "review", "--input", "v3", "--wait", cwd=project)
    run_id = _started(proc)
    wait_for(lambda: _waiting_gate(project, run_id))
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 3, out
    assert f"run {run_id} is waiting at gate 'approve'" in out
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting"

    approved = swell("approve", run_id, "--choice", "ship", cwd=project)
    assert "swell resume" in approved.stdout
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    evs = events(project, run_id)
    assert [e["type"] for e in evs].count("gate.waiting") == 1
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


class Terminal:
    """`swell ARGS` on a pseudo-terminal: what it printed so far, and what we type."""

    def __init__(self, project: Path, *args: str) -> None:
        self.leader, follower = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "swell", *args],
            cwd=project,
            stdin=follower,
            stdout=follower,
            stderr=follower,
            close_fds=True,
        )
        os.close(follower)
        self.seen = b""

    def read_until(self, token: bytes, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while token not in self.seen and time.monotonic() < deadline:
            ready, _, _ = select.select([self.leader], [], [], 0.5)
            if ready:
                try:
                    self.seen += os.read(self.leader, 4096)
                except OSError:
                    break
        assert token in self.seen, self.seen.decode(errors="replace")

    def type(self, text: bytes) -> None:
        os.write(self.leader, text)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        os.close(self.leader)


def test_terminal_prompt_approves_a_gate(project: Path) -> None:
    """On a terminal, `swell run` asks at the gate; the answer routes the run."""
    with Terminal(project, "run", "review", "--input", "tty") as term:
        term.read_until(b"approve? [ship/rework/drop]")
        term.type(b"ship\n")
        term.read_until(b"run succeeded")
        assert term.proc.wait(timeout=30) == 0
    assert b"gate approve approved (ship) by terminal" in term.seen


def test_enter_at_the_terminal_prompt_takes_the_gates_default(project: Path) -> None:
    with Terminal(project, "run", "review", "--input", "tty") as term:
        term.read_until(b"approve? [ship/rework/drop] (Enter: ship) ")
        term.type(b"\n")
        term.read_until(b"run succeeded")
        assert term.proc.wait(timeout=30) == 0
    assert b"gate approve approved (ship) by terminal" in term.seen
    assert b"shipped" in term.seen


def test_a_run_without_a_terminal_stops_at_a_gate_and_resumes_after_approval(
    project: Path,
) -> None:
    stopped = swell("run", "review", "--input", "v4", cwd=project, timeout=60)
    run_id = run_id_of(stopped.stdout)
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    assert f"swell approve {run_id} approve --choice ship|rework|drop" in stopped.stdout
    assert f"swell resume {run_id}" in stopped.stdout
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "waiting" and status["waiting_gates"][0]["step_id"] == "approve"

    again = swell("resume", run_id, cwd=project, timeout=60)  # still undecided: stops again
    assert again.returncode == 3, again.stdout + again.stderr
    assert f"swell approve {run_id} approve" in again.stdout

    assert swell("approve", run_id, "approve", "--choice", "ship", cwd=project).returncode == 0
    resumed = swell("resume", run_id, cwd=project, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "shipped" in resumed.stdout
    evs = events(project, run_id)
    assert [e["type"] for e in evs].count("gate.waiting") == 1
    assert [s["step_id"] for s in swell_json("status", run_id, cwd=project)["steps"]] == [
        "prepare",
        "approve",
        "ship",
    ]


def test_a_gate_in_a_sub_pipeline_stops_the_run_too(project: Path) -> None:
    write_pipeline(
        project,
        "outer",
        """
kind: WavePipeline
steps:
  - id: review
    pipeline: review
  - id: after
    dependencies: [review]
    script: echo outer done
""",
    )
    stopped = swell("run", "outer", "--input", "v5", cwd=project, timeout=60)
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    run_id = run_id_of(stopped.stdout)
    (child,) = swell_json("status", run_id, cwd=project)["children"]
    assert f"swell approve {child} approve --choice" in stopped.stdout
    assert f"swell resume {run_id}" in stopped.stdout
    approved = swell("approve", child, "approve", "--choice", "ship", cwd=project)
    assert f"continue it with: swell resume {run_id}" in approved.stdout
    resumed = swell("resume", run_id, cwd=project, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "outer done" in resumed.stdout
    assert swell_json("status", child, cwd=project)["status"] == "succeeded"
