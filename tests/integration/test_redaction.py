"""A secret in the environment never reaches the store, the logs or `-o json`."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline
from swell.engine.visit.output_log import ROW_CHARS
from swell.events.redact import MASK
from swell.web.app import create_app
from swell.web.state import ServeSettings

TOKEN = "tok-0123456789-abcdef"
SHAPED = "ghp_" + "Zz9" * 12  # a GitHub token swell was never told about

PIPELINE = """kind: WavePipeline
metadata: {name: leaky}
steps:
  - id: leak
    type: command
    script: |
      echo "using $DEPLOY_TOKEN and $NOTE"
      sleep 0.6
      echo "again $DEPLOY_TOKEN" >&2
      exit 1
"""


def test_secrets_are_masked_in_everything_swell_keeps(project: Path) -> None:
    write_pipeline(project, "leaky", PIPELINE)
    env = {**os.environ, "DEPLOY_TOKEN": TOKEN, "NOTE": SHAPED}
    run = swell("run", "leaky", "-o", "json", cwd=project, env=env)
    assert run.returncode == 1
    assert TOKEN not in run.stdout and SHAPED not in run.stdout
    assert "using [REDACTED] and [REDACTED]" in run.stdout
    text = swell("run", "leaky", cwd=project, env=env)
    run_id = run_id_of(text.stdout)
    assert TOKEN not in text.stdout + text.stderr
    logs = swell("logs", run_id, "-o", "json", cwd=project)
    assert "[REDACTED]" in logs.stdout and TOKEN not in logs.stdout
    # the store's files and the command's log artifact hold no copy either
    kept = [p for p in Path(os.environ["SWELL_STATE_DIR"]).rglob("*") if p.is_file()]
    assert kept
    for path in kept:
        data = path.read_bytes()
        assert TOKEN.encode() not in data and SHAPED.encode() not in data, path


# ------------------------------------------------- identifiers are never masked

PLAN_TASK = """kind: WavePipeline
metadata: {name: plan-task}
steps:
  - id: plan
    type: command
    script: |
      echo "planning for $SWELL_RUN_ID"
      echo "key sk-ant-api03-%s and $MY_API_TOKEN"
""" % ("Kq3_x9" * 8)


def test_a_run_whose_id_holds_a_key_shape_keeps_its_id(project: Path) -> None:
    """`plan-task-20261127-...` holds `sk-20261127-...`: its events were once stored
    under `plan-ta[REDACTED]`, and the run stayed `pending` while `swell run` said 0."""
    write_pipeline(project, "plan-task", PLAN_TASK)
    env = {**os.environ, "MY_API_TOKEN": TOKEN}
    run = swell("run", "plan-task", cwd=project, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    assert run_id.startswith("plan-task-") and "sub-pipeline" not in run.stdout
    (listed,) = swell_json("list", cwd=project)
    assert (listed["id"], listed["status"], listed["visits"]) == (run_id, "succeeded", 1)
    status = swell_json("status", run_id, cwd=project)
    assert (status["id"], status["status"]) == (run_id, "succeeded")
    stored = events(project, run_id)
    assert {e["run_id"] for e in stored} == {run_id}
    assert stored[-1]["type"] == "run.finished" and stored[-1]["status"] == "succeeded"
    # the output still has its secrets masked, and the run id as it is
    logs = swell("logs", run_id, "--step", "plan", cwd=project).stdout
    assert f"planning for {run_id}" in logs
    assert f"key {MASK} and {MASK}" in logs
    assert "Kq3_x9" not in logs and TOKEN not in logs


# ----------------------------------------- a secret split across rows or writes

PAD = ROW_CHARS - 10  # the secret starts 10 characters before a row ends

SPLIT = """kind: WavePipeline
metadata: {name: split}
steps:
  - id: print
    type: command
    script: |
      pad=$(head -c %d /dev/zero | tr '\\0' x)
      %s
      sleep 0.6
      printf '\\nlast %%s' "$MY_API_TOKEN"
"""
ONE_WRITE = """printf '%s%s\\n' "$pad" "$MY_API_TOKEN\""""
TWO_WRITES = """printf '%s%.12s' "$pad" "$MY_API_TOKEN"; sleep 0.6; printf '%s\\n' "${MY_API_TOKEN#????????????}\""""
LONG_TOKEN = "tok-" + "0123456789abcdef" * 3  # its two halves must not show either


@pytest.mark.parametrize("printed", [ONE_WRITE, TWO_WRITES], ids=["one-write", "two-writes"])
def test_a_secret_across_the_end_of_a_row_is_masked(project: Path, printed: str) -> None:
    write_pipeline(project, "split", SPLIT % (PAD, printed))
    env = {**os.environ, "MY_API_TOKEN": LONG_TOKEN}
    run = swell("run", "split", cwd=project, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    text = swell("logs", run_id, "--step", "print", cwd=project).stdout
    as_json = swell("logs", run_id, "--step", "print", "-o", "json", cwd=project).stdout
    chunks = [json.loads(line) for line in as_json.splitlines()]
    output = "".join(c["text"] for c in chunks if "text" in c and c.get("stream") == "stdout")
    for shown in (text, as_json, output):
        assert LONG_TOKEN not in shown
        assert LONG_TOKEN[:12] not in shown and LONG_TOKEN[12:] not in shown
    # nothing is lost: the padding, the mask and the end the visit printed last
    assert output == "x" * PAD + f"{MASK}\n\nlast {MASK}"


# --------------------------------------------------------- a secret in --input

ECHO_INPUT = """kind: WavePipeline
metadata: {name: echo-input}
steps:
  - id: take
    type: command
    script: printf '%s' {{ input }} | sha256sum
"""


def test_a_secret_in_the_input_is_never_shown(project: Path) -> None:
    key = "sk-ant-api03-" + "Zp4_w8" * 7
    given = f"use {key} with {TOKEN}"
    write_pipeline(project, "echo-input", ECHO_INPUT)
    env = {**os.environ, "DEPLOY_TOKEN": TOKEN}
    run = swell("run", "echo-input", "--input", given, cwd=project, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    masked = f"use {MASK} with {MASK}"
    (listed,) = swell_json("list", cwd=project)
    assert listed["input"] == masked
    assert swell_json("status", run_id, cwd=project)["input"] == masked
    assert events(project, run_id)[0]["input"] == masked

    async def dashboard() -> Any:
        app = create_app(ServeSettings(root=project))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            return (await http.get("/api/runs")).json()

    shown = json.dumps(asyncio.run(dashboard()))
    assert masked in shown and key not in shown and TOKEN not in shown
    # the step was given the input as the user typed it, and no file swell keeps has it
    digest = hashlib.sha256(given.encode()).hexdigest()
    assert digest in swell("logs", run_id, "--step", "take", cwd=project).stdout
    for path in Path(os.environ["SWELL_STATE_DIR"]).rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


GATED = """kind: WavePipeline
metadata: {name: gated}
steps:
  - id: wait
    gate: {type: approval, message: "go?"}
  - id: take
    type: command
    dependencies: [wait]
    script: printf '%s' {{ input }} | sha256sum
"""


def test_a_resumed_run_goes_on_with_its_input_masked(project: Path) -> None:
    """swell keeps no secret the input held, so a run resumed by another process
    (`swell resume`) has only the masked input, and says so."""
    key = "sk-ant-api03-" + "Zp4_w8" * 7
    write_pipeline(project, "gated", GATED)
    proc = start_swell("run", "gated", "--input", f"use {key}", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert swell("approve", run_id, cwd=project).returncode == 0
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"note: run {run_id}'s input held secrets, which swell does not keep" in resumed.stderr
    digest = hashlib.sha256(f"use {MASK}".encode()).hexdigest()
    assert digest in swell("logs", run_id, "--step", "take", cwd=project).stdout
