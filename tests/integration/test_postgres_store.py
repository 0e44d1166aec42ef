"""The CLI over the Postgres store: chosen by SWELL_STORE or `runtime.store` in wave.yaml,
and `swell run`, `status`, `list` and `logs` show a run as they do over SQLite."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import run_id_of, swell, swell_json
from postgres_server import PostgresServer
from swell.store.location import open_store

pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def _same(text: str) -> str:
    """Output with what differs between two runs of one pipeline left out: run ids,
    times, durations."""
    text = re.sub(r"loop-\d{8}-\d{6}-[0-9a-f]+", "RUN", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "TIME", text)
    text = re.sub(r"\b\d\d:\d\d:\d\d\b", "TIME", text)
    text = re.sub(r"\b\d+(\.\d+)?m?s\b", "DURATION", text)
    return re.sub(r"[ \t]+", " ", text)


def test_run_status_list_and_logs_over_postgres_read_as_over_sqlite(
    project: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.fresh_schema()
    outputs: dict[str, list[str]] = {}
    for name, env in (("sqlite", _env()), ("postgres", _env(SWELL_STORE=url))):
        ran = swell("run", "loop", "--input", "add a greeting", cwd=project, env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        run_id = run_id_of(ran.stdout)
        shown = [ran.stdout]
        for command in (["status", run_id], ["list"], ["logs", run_id]):
            result = swell(*command, cwd=project, env=env)
            assert result.returncode == 0, result.stderr
            shown.append(result.stdout)
        assert run_id in shown[2]  # listed
        outputs[name] = [_same(text) for text in shown]
    assert outputs["postgres"] == outputs["sqlite"]

    store = open_store(url)  # the run is in Postgres, and only the one run
    try:
        (run,) = store.list_runs()
        assert (run.pipeline, run.status, run.visits) == ("loop", "succeeded", 9)
        assert store.owner(run.id) is None  # the process that ran it ended: claim released
    finally:
        store.close()


def test_runtime_store_in_wave_yaml_chooses_postgres(
    project: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.fresh_schema()
    manifest = project / "wave.yaml"
    text = manifest.read_text()
    assert text.count("\nruntime:\n") == 1
    manifest.write_text(text.replace("\nruntime:\n", f"\nruntime:\n  store: '{url}'\n"))
    env = {k: v for k, v in os.environ.items() if k != "SWELL_STORE"}
    ran = swell("run", "loop", cwd=project, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run_id = run_id_of(ran.stdout)
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"
    store = open_store(url)
    try:
        assert [r.id for r in store.list_runs()] == [run_id]
    finally:
        store.close()
