"""A broken disk under the SQLite store: a disk that fills up mid-run, a read-only
state directory or database file, a damaged database. Each is one error naming
state.db and the fix, a non-zero exit and no traceback; a run stopped by a full disk
is resumable once space returns, with nothing it recorded lost.

The full disk is a small tmpfs and the read-only store a read-only bind mount, each
in a user and mount namespace of its own (`unshare`): no root needed, and root (as
in CI) is stopped by them too, where a chmod would not stop it. Each namespace lives
as long as one shell script, which runs the commands a user would and keeps what
each printed (`Namespace`).
"""

from __future__ import annotations

import json
import shlex
import socket
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from conftest import run_id_of, start_swell, swell, wait_for, write_pipeline

SWELL = f"{shlex.quote(sys.executable)} -m swell"


@dataclass(frozen=True)
class Said:
    """What one command printed, and its exit code."""

    rc: int
    out: str
    err: str


class Namespace:
    """A shell script run in a new user and mount namespace: `setup` (mounts) first,
    then each `step(name, command)`, whose output is kept under its name."""

    def __init__(self, tmp: Path, setup: str) -> None:
        self.dir = tmp / "said"
        self.dir.mkdir()
        self.lines = [
            "set -e",
            setup,
            "set +e",
            f"SAID={shlex.quote(str(self.dir))}",
            'step() { n=$1; shift; sh -c "$*" >"$SAID/$n.out" 2>"$SAID/$n.err"; '
            'echo $? >"$SAID/$n.rc"; }',
        ]

    def step(self, name: str, command: str) -> None:
        self.lines.append(f"step {name} {shlex.quote(command)}")

    def shell(self, command: str) -> None:
        self.lines.append(command)

    def run(self, cwd: Path) -> dict[str, Said]:
        script = "\n".join(self.lines)
        done = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"the namespace could not be set up: {done.stderr}"
        said = {}
        for rc in sorted(self.dir.glob("*.rc")):
            name = rc.stem
            said[name] = Said(
                int(rc.read_text()),
                (self.dir / f"{name}.out").read_text(),
                (self.dir / f"{name}.err").read_text(),
            )
        return said


def one_error(said: Said, *words: str) -> None:
    """A non-zero exit with one `error:` line that says each of `words`, no traceback."""
    assert said.rc != 0, said
    assert "Traceback" not in said.err + said.out, said.err
    errors = [line for line in said.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, said.err
    for word in words:
        assert word in errors[0], (word, errors[0])


# ------------------------------------------------------------------ a full disk

FILL = """
kind: WavePipeline
metadata: {{name: fill}}
steps:
  - id: first
    type: command
    script: echo first
  - id: fill
    type: command
    dependencies: [first]
    script: |
      # a build that fills the disk, once
      if [ ! -e {mark} ]; then
        touch {mark}
        head -c 64000000 /dev/zero > {filler} 2>/dev/null || true
      fi
      echo filled
  - id: last
    type: command
    dependencies: [fill]
    script: echo last
"""


def test_a_disk_that_fills_mid_run_stops_it_resumable_with_nothing_lost(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    filler = isolated_state / "workspaces" / "filler"
    pipeline = FILL.format(mark=tmp_path / "filled", filler=filler)
    write_pipeline(project, "fill", pipeline)
    isolated_state.mkdir()
    db = isolated_state / "state.db"
    ns = Namespace(tmp_path, f"mount -t tmpfs -o size=3m tmpfs {isolated_state}")
    ns.step("run", f"{SWELL} run fill")
    ns.shell('export RUN=$(head -n 1 "$SAID/run.out" | cut -d" " -f2)')
    ns.step("full_status", f"{SWELL} status $RUN")
    ns.step("full_resume", f"{SWELL} resume $RUN")
    ns.step("full_doctor", f"{SWELL} doctor")
    ns.shell(f"rm {filler}")  # space returns
    ns.step("status", f"{SWELL} status $RUN -o json")
    ns.step("resume", f"{SWELL} resume $RUN")
    ns.step("logs", f"{SWELL} logs $RUN -o json")
    said = ns.run(project)

    run_id = run_id_of(said["run"].out)
    # the first file the full disk refuses is named: the store, or a step's log beside it
    one_error(
        said["run"], f"run {run_id} stopped", str(isolated_state), "disk is full", "free space"
    )
    assert f"then `swell resume {run_id}`" in said["run"].err
    # while the disk is full: the run reads as resumable; resuming it again is one error
    assert "swell resume" in said["full_status"].out and said["full_status"].rc == 0
    one_error(said["full_resume"], str(db), "disk is full")
    assert said["full_doctor"].rc == 1 and "full" in said["full_doctor"].out

    # space is back: the run is open where the last committed batch left it
    status = json.loads(said["status"].out)
    assert status["status"] == "running" and status["stale"], status
    assert said["resume"].rc == 0, said["resume"].err
    events = [json.loads(line) for line in said["logs"].out.splitlines()]
    finished = [(e["step_id"], e["visit"]) for e in events if e["type"] == "step.finished"]
    assert finished == [("first", 1), ("fill", 2), ("last", 1)]  # `first` ran once
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run.finished" and events[-1]["status"] == "succeeded"


def test_a_full_disk_before_a_run_starts_is_one_error(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    write_pipeline(project, "one", "kind: WavePipeline\nmetadata: {name: one}\nsteps:\n"
                   "  - {id: a, type: command, script: echo a}\n")  # fmt: skip
    isolated_state.mkdir()
    ns = Namespace(tmp_path, f"mount -t tmpfs -o size=3m tmpfs {isolated_state}")
    ns.step("first", f"{SWELL} run one")  # the store exists, with a run in it
    ns.shell(f"head -c 64000000 /dev/zero > {isolated_state}/filler 2>/dev/null || true")
    ns.step("run", f"{SWELL} run one")
    ns.step("list", f"{SWELL} list -o json")
    said = ns.run(project)
    assert said["first"].rc == 0, said["first"].err
    one_error(said["run"], str(isolated_state / "state.db"), "disk is full", "free space")
    assert said["list"].rc == 0 and len(json.loads(said["list"].out)) >= 1


# ------------------------------------------------------------------ read-only

READ_ONLY = {
    "directory": "mount --bind {d} {d} && mount -o remount,bind,ro {d}",
    "file": "mount --bind {d}/state.db {d}/state.db && mount -o remount,bind,ro {d}/state.db",
}


@pytest.mark.parametrize("what", sorted(READ_ONLY))
def test_a_read_only_store_is_read_and_every_write_is_one_error(
    project: Path, isolated_state: Path, tmp_path: Path, what: str
) -> None:
    waiting = swell("run", "review", "--input", "v1", cwd=project)
    assert waiting.returncode == 3, waiting.stderr  # stopped at its approval gate
    run_id = run_id_of(waiting.stdout)
    db = isolated_state / "state.db"
    ns = Namespace(tmp_path, READ_ONLY[what].format(d=isolated_state))
    for name, command in [
        ("run", "run review"),
        ("approve", f"approve {run_id} approve --choice ship"),
        ("resume", f"resume {run_id}"),
        ("cancel", f"cancel {run_id}"),
        ("list", "list"),
        ("status", f"status {run_id}"),
        ("logs", f"logs {run_id}"),
    ]:
        ns.step(name, f"{SWELL} {command}")
    said = ns.run(project)
    for name in ("run", "approve", "resume", "cancel"):
        one_error(said[name], str(db), "writable")
    for name in ("list", "status", "logs"):
        assert said[name].rc == 0 and run_id in said[name].out, (name, said[name])
    assert "waiting" in said["status"].out
    # nothing was changed: the run still waits at its gate
    again = swell("status", run_id, "-o", "json", cwd=project)
    assert json.loads(again.stdout)["status"] == "waiting"


def test_a_read_only_state_directory_without_a_store_yet_is_one_error(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    write_pipeline(project, "one", ONE_STEP)
    isolated_state.mkdir()
    ns = Namespace(tmp_path, READ_ONLY["directory"].format(d=isolated_state))
    ns.step("run", f"{SWELL} run one")
    said = ns.run(project)
    one_error(said["run"], str(isolated_state / "state.db"), "writable")


# ------------------------------------------------------------------ damaged

ONE_STEP = "kind: WavePipeline\nmetadata: {name: one}\nsteps:\n  - {id: a, type: command, script: seq 1 500}\n"


def _damage(db: Path, where: str) -> None:
    """Overwrite the database's header, or the first page of its events table."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()
    (size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    with db.open("r+b") as f:
        f.seek(0 if where == "header" else (root - 1) * size)
        f.write(b"\xa5" * (100 if where == "header" else size))


@pytest.mark.parametrize("where", ["events", "header"])
def test_a_damaged_store_is_one_error_naming_the_file_and_the_fix(
    project: Path, isolated_state: Path, where: str
) -> None:
    write_pipeline(project, "one", ONE_STEP)
    first = swell("run", "one", cwd=project)
    assert first.returncode == 0, first.stderr
    run_id = run_id_of(first.stdout)
    db = isolated_state / "state.db"
    _damage(db, where)
    for args in (
        ("run", "one"),
        ("resume", run_id),
        ("list",),
        ("status", run_id),
        ("logs", run_id),
        ("approve", run_id),
    ):
        said = swell(*args, cwd=project)
        one_error(Said(said.returncode, said.stdout, said.stderr), str(db), "damaged", "backup")
    doctor = swell("doctor", cwd=project)
    assert doctor.returncode == 1 and str(db) in doctor.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_answers_a_damaged_store_with_503_and_logs_no_traceback(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(project, "one", ONE_STEP)
    assert swell("run", "one", cwd=project).returncode == 0
    db = isolated_state / "state.db"
    _damage(db, "events")
    port = _free_port()
    proc = start_swell("serve", "--port", str(port), cwd=project)
    url = f"http://127.0.0.1:{port}"

    def answer() -> httpx.Response | None:
        try:
            return httpx.get(f"{url}/api/runs", timeout=5)
        except httpx.HTTPError:
            return None

    try:
        got = wait_for(answer, timeout=60)
        page = httpx.get(f"{url}/", timeout=5)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert got.status_code == 503
    detail = got.json()["detail"]
    assert str(db) in detail and "damaged" in detail and "backup" in detail
    assert page.status_code == 503 and str(db) in page.text
    assert "Traceback" not in out + err, err


# ------------------------------------------------------- the disk of the run's files

MOUNT_AFTER_FILL = """
kind: WavePipeline
metadata: {{name: fillws}}
steps:
  - id: first
    type: command
    script: echo first
  - id: fill
    type: command
    dependencies: [first]
    script: |
      # a build that fills the disk of the workspaces
      head -c 64000000 /dev/zero > {filler} 2>/dev/null || true
      echo filled
  - id: last
    type: command
    dependencies: [fill]
    workspace:
      mount: [{{source: ./, target: /project}}]
    script: test -f wave.yaml && test -f scripts/agent-replies.yaml
"""


def test_a_full_disk_under_the_workspaces_stops_the_run_resumable(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    """The store has room, the workspaces' disk does not: copying a mount into the
    workspace stops the run (as a full store does), not the step."""
    workspaces = isolated_state / "workspaces"
    filler = workspaces / "filler"
    write_pipeline(project, "fillws", MOUNT_AFTER_FILL.format(filler=filler))
    workspaces.mkdir(parents=True)
    ns = Namespace(tmp_path, f"mount -t tmpfs -o size=2m tmpfs {workspaces}")
    ns.step("run", f"{SWELL} run fillws")
    ns.shell('export RUN=$(head -n 1 "$SAID/run.out" | cut -d" " -f2)')
    ns.step("full_status", f"{SWELL} status $RUN -o json")
    ns.shell(f"rm {filler}")  # space returns
    ns.step("resume", f"{SWELL} resume $RUN")
    ns.step("logs", f"{SWELL} logs $RUN -o json")
    said = ns.run(project)

    run_id = run_id_of(said["run"].out)
    one_error(said["run"], f"run {run_id} stopped", str(workspaces), "disk is full", "free space")
    assert f"then `swell resume {run_id}`" in said["run"].err
    status = json.loads(said["full_status"].out)
    assert status["status"] == "running" and status["stale"], status
    assert said["resume"].rc == 0, said["resume"].out
    events = [json.loads(line) for line in said["logs"].out.splitlines()]
    assert not [e for e in events if e["type"] == "step.failed"], events
    finished = [e["step_id"] for e in events if e["type"] == "step.finished"]
    assert finished == ["first", "fill", "last"]  # none ran twice
    assert events[-1]["type"] == "run.finished" and events[-1]["status"] == "succeeded"


def test_a_read_only_run_directory_stops_the_run_resumable(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    """A step's log cannot be written to the run directory (remounted read-only): the
    run stops, naming the directory and the fix, and resumes once it is writable."""
    write_pipeline(project, "one", ONE_STEP)
    runs = isolated_state / "runs"
    runs.mkdir(parents=True)
    ns = Namespace(tmp_path, READ_ONLY["directory"].format(d=runs))
    ns.step("run", f"{SWELL} run one")
    ns.shell('export RUN=$(head -n 1 "$SAID/run.out" | cut -d" " -f2)')
    ns.shell(f"mount -o remount,bind,rw {runs}")
    ns.step("resume", f"{SWELL} resume $RUN")
    ns.step("logs", f"{SWELL} logs $RUN -o json")
    said = ns.run(project)

    run_id = run_id_of(said["run"].out)
    one_error(said["run"], f"run {run_id} stopped", str(runs), "read-only", "writable")
    assert said["resume"].rc == 0, said["resume"].err
    events = [json.loads(line) for line in said["logs"].out.splitlines()]
    assert not [e for e in events if e["type"] == "step.failed"], events
    assert events[-1]["type"] == "run.finished" and events[-1]["status"] == "succeeded"
