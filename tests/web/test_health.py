"""`/healthz` (no token needed) and Prometheus `/metrics` (behind the token when one
is set): runs by status, visits, hook deliveries."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path

import httpx
from helpers import client

from conftest import swell, wait_for, write_pipeline

FAILS = """kind: WavePipeline
metadata: {name: fails}
hooks:
  - {name: down, event: run_failed, type: http, url: 'http://127.0.0.1:PORT/x'}
steps:
  - {id: boom, type: command, script: exit 1}
"""
SAMPLE = re.compile(r'^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+]+$')


def _get(project: Path, path: str, token: str | None = None, **headers: str) -> httpx.Response:
    async def go() -> httpx.Response:
        async with client(project, token=token) as http:
            return await http.get(path, headers=headers)

    return asyncio.run(go())


def _samples(text: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        assert SAMPLE.match(line), line
        name, value = line.rsplit(" ", 1)
        found[name] = float(value)
    return found


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_healthz_answers_without_the_token(project: Path) -> None:
    answer = _get(project, "/healthz", token="secret")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}
    assert _get(project, "/api/runs", token="secret").status_code == 401


def test_metrics_count_runs_visits_and_hook_failures(project: Path) -> None:
    assert swell("run", "review", "v1", "--auto-approve", cwd=project).returncode == 0
    write_pipeline(project, "fails", FAILS.replace("PORT", str(_closed_port())))
    assert swell("run", "fails", cwd=project).returncode != 0
    answer = _get(project, "/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = _samples(answer.text)
    assert got['swell_runs{status="succeeded"}'] == 1
    assert got['swell_runs{status="failed"}'] == 1
    assert got['swell_runs{status="running"}'] == 0
    assert got["swell_visits_total"] == 4  # prepare, approve, ship; boom
    assert got['swell_hook_deliveries_total{outcome="delivered"}'] == 0
    # the hook gives up after its tries, maybe in the process the run handed it to
    failed = 'swell_hook_deliveries_total{outcome="failed"}'
    wait_for(lambda: _samples(_get(project, "/metrics").text)[failed] == 1, 60)
    assert got["swell_server_run_processes"] == 0
    assert "# TYPE swell_runs gauge" in answer.text


def test_metrics_need_the_token_when_one_is_set(project: Path) -> None:
    assert _get(project, "/metrics", token="secret").status_code == 401
    with_it = _get(project, "/metrics", token="secret", Authorization="Bearer secret")
    assert with_it.status_code == 200 and "swell_runs" in with_it.text
