"""Forge webhooks in, against a real `swell serve` on 127.0.0.1: a signed delivery
starts one routed run, the same delivery again starts nothing, a forged or missing
signature is 401 and runs nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest

from conftest import start_swell, wait_for
from swell.runtime import check_pipeline, open_runtime
from swell.service.dispatch import Settings, record_item
from swell.store.dispatch import DispatchKey
from swell.store.location import open_store

from .helpers import MANIFEST, run_facts, service_project

SECRET = "s3cret-for-tests"
TOKEN = "dashboard-token"
ISSUE = {
    "action": "labeled",
    "issue": {
        "html_url": "https://github.com/o/r/issues/5",
        "title": "Crash on start",
        "labels": [{"name": "ready"}],
    },
    "repository": {"full_name": "o/r", "html_url": "https://github.com/o/r"},
}


def _project(root: Path) -> Path:
    project = service_project(root)
    (project / "wave.yaml").write_text(
        MANIFEST.replace(
            "runtime: {workspace_root: .agents/workspaces}\n",
            "runtime:\n  workspace_root: .agents/workspaces\n  routing: {default: echo}\n",
        )
    )
    return project


class Served(NamedTuple):
    url: str
    pid: int  # the server's process


@pytest.fixture
def hooks_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    monkeypatch.setenv("SWELL_WEBHOOK_SECRET", SECRET)
    with serving(_project(tmp_path / "p")) as served:
        yield served


@pytest.fixture
def hooks_url(hooks_server: Served) -> str:
    return hooks_server.url


@contextmanager
def serving(project: Path) -> Iterator[Served]:
    """`swell serve` on a free port of 127.0.0.1, stopped at the end."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start_swell("serve", "--port", str(port), "--token", TOKEN, cwd=project)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{url}/healthz", timeout=1).status_code in (200, 401, 404)
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=60)
        yield Served(url, proc.pid)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def post(url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    """A delivery (a long timeout: the server may start slowly on a loaded machine)."""
    return httpx.post(url, content=body, headers=headers, timeout=120)


def _github(body: bytes, delivery: str, secret: str = SECRET) -> dict[str, str]:
    sig = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": f"sha256={sig}",
        "Content-Type": "application/json",
    }


def test_the_same_delivery_twice_starts_one_run(hooks_url: str, isolated_state: Path) -> None:
    body = json.dumps(ISSUE).encode()
    first = post(f"{hooks_url}/api/hooks/github", body, _github(body, "d-1"))
    assert first.status_code == 202, first.text
    run_id = first.json()["run_id"]
    assert first.json()["pipeline"] == "echo"
    again = post(f"{hooks_url}/api/hooks/github", body, _github(body, "d-1"))
    assert again.status_code == 200
    assert again.json() | {"why": ""} == {
        "run_id": run_id,
        "pipeline": "echo",
        "why": "",
        "duplicate": True,
    }
    wait_for(lambda: run_facts(isolated_state).get(run_id, ("",))[0] == "succeeded")
    facts = run_facts(isolated_state)
    assert list(facts) == [run_id]
    assert facts[run_id][1] == "https://github.com/o/r/issues/5"  # the issue is the input


@pytest.mark.parametrize(
    "headers",
    [
        lambda body: _github(body, "d-2", secret="forged"),
        lambda body: {k: v for k, v in _github(body, "d-3").items() if "Signature" not in k},
    ],
    ids=["forged", "missing"],
)
def test_a_bad_or_missing_signature_is_401_and_runs_nothing(
    hooks_url: str, isolated_state: Path, headers: object
) -> None:
    body = json.dumps(ISSUE).encode()
    answer = post(f"{hooks_url}/api/hooks/github", body, headers(body))  # type: ignore[operator]
    assert answer.status_code == 401
    assert "signature" in answer.json()["detail"]
    assert run_facts(isolated_state) == {}


def test_gitlab_token_and_gitea_signature(hooks_url: str, isolated_state: Path) -> None:
    mr = {
        "object_kind": "merge_request",
        "object_attributes": {
            "url": "https://gitlab.com/o/r/-/merge_requests/3",
            "target_branch": "main",
            "action": "open",
        },
        "project": {"path_with_namespace": "o/r"},
        "labels": [{"title": "ready"}],
    }
    body = json.dumps(mr).encode()
    gitlab = {"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Event-UUID": "u-1"}
    bad = post(f"{hooks_url}/api/hooks/gitlab", body, gitlab | {"X-Gitlab-Token": "nope"})
    assert bad.status_code == 401
    good = post(f"{hooks_url}/api/hooks/gitlab", body, gitlab | {"X-Gitlab-Token": SECRET})
    assert good.status_code == 202, good.text
    sig = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    gitea = {"X-Gitea-Event": "issues", "X-Gitea-Delivery": "g-1", "X-Gitea-Signature": sig}
    assert post(f"{hooks_url}/api/hooks/gitea", body, gitea).status_code == 202
    inputs = sorted(f[1] for f in run_facts(isolated_state).values())
    assert inputs == ["https://gitlab.com/o/r/-/merge_requests/3"] * 2


def test_a_ping_runs_nothing(hooks_url: str, isolated_state: Path) -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    headers = _github(body, "p-1") | {"X-GitHub-Event": "ping"}
    answer = post(f"{hooks_url}/api/hooks/github", body, headers)
    assert answer.status_code == 200 and answer.json()["why"] == "ping"
    assert run_facts(isolated_state) == {}


def test_the_dashboard_token_still_guards_everything_else(hooks_url: str) -> None:
    assert httpx.get(f"{hooks_url}/api/runs").status_code == 401
    assert httpx.post(f"{hooks_url}/api/hooks/bitbucket", content=b"{}").status_code == 404


def test_the_answer_comes_once_the_run_is_recorded_before_its_process_starts(
    hooks_server: Served, isolated_state: Path
) -> None:
    """GitHub gives up after 10 s: the 202 does not wait for the run's process, which
    takes seconds to start on a loaded machine; the run is recorded when it comes."""
    body = json.dumps(ISSUE).encode()
    answer = post(f"{hooks_server.url}/api/hooks/github", body, _github(body, "d-early"))
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    store = open_store(isolated_state / "state.db")
    try:  # recorded, and not claimed by its process yet (at most by the server handing on)
        assert store.get_run(run_id).status == "pending"
        owner = store.owner(run_id)
        assert owner is None or owner.pid == hooks_server.pid, owner
    finally:
        store.close()
    wait_for(lambda: run_facts(isolated_state)[run_id][0] == "succeeded")
    assert run_facts(isolated_state)[run_id][2] == 1  # started once


def test_a_run_recorded_but_not_handed_on_is_started_when_serve_starts(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a server killed between recording a delivery's run and handing it on
    leaves: the run pending, claimed by nobody. The next `swell serve` starts it, once."""
    monkeypatch.setenv("SWELL_WEBHOOK_SECRET", SECRET)
    project = _project(tmp_path / "p")
    rt = open_runtime(project)
    try:
        loaded, _ = check_pipeline(rt, "echo")
        key = DispatchKey("webhook:github", "d-left", "echo")
        run_id = record_item(rt, loaded, "left behind", key, Settings())
    finally:
        rt.store.close()
    assert run_facts(isolated_state)[run_id][:1] == ("pending",)
    with serving(project):  # it finds the run when it starts
        wait_for(lambda: run_facts(isolated_state)[run_id][0] == "succeeded", timeout=60)
    assert run_facts(isolated_state) == {run_id: ("succeeded", "left behind", 1)}
