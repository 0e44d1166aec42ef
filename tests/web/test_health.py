"""`/healthz` (no token needed) and Prometheus `/metrics` (behind the token when one
is set): runs by status, visits, hook deliveries."""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path

import httpx
import pytest
from helpers import client

from conftest import swell, wait_for, write_pipeline
from swell.runtime import check_pipeline, open_runtime
from swell.service.dispatch import Settings, record_item
from swell.store.dispatch import DispatchKey

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


def _record(project: Path, item: str, auto_approve: bool = False) -> str:
    """A work item's run as a dispatcher records it (pending until a process starts it)."""
    rt = open_runtime(project)
    try:
        loaded, _ = check_pipeline(rt, "review")
        key = DispatchKey("file:queue.jsonl", item, "review")
        return record_item(rt, loaded, "v1", key, Settings(auto_approve=auto_approve))
    finally:
        rt.store.close()


def test_metrics_show_dispatched_items_queue_depth_and_lag_per_source(project: Path) -> None:
    _record(project, "waits")
    started = _record(project, "goes", auto_approve=True)
    assert swell("resume", started, cwd=project).returncode == 0
    got = _samples(_get(project, "/metrics").text)
    source = '{source="file:queue.jsonl"}'
    assert got[f"swell_dispatched_items_total{source}"] == 2
    assert got[f"swell_dispatch_queue_depth{source}"] == 1  # the one no process started
    assert got[f"swell_dispatch_lag_seconds{source}"] >= 0
    assert got["swell_visits_total"] == 3  # the resumed run's: prepare, approve, ship


def test_metrics_count_refused_webhook_deliveries_since_the_server_started(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWELL_WEBHOOK_SECRET", "s3cret")
    headers = {"X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": "sha256=forged"}

    async def go() -> str:
        async with client(project) as http:
            for _ in range(2):
                refused = await http.post("/api/hooks/github", content=b"{}", headers=headers)
                assert refused.status_code == 401
            return (await http.get("/metrics")).text

    got = _samples(asyncio.run(go()))
    assert got['swell_webhook_failures_total{forge="github",reason="signature"}'] == 2
    assert got['swell_webhook_failures_total{forge="gitlab",reason="signature"}'] == 0
