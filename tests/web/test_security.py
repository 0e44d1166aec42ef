"""Who may use the dashboard: the bind and token rules, CSRF on POSTs, Host checks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from helpers import BASE, HOSTILE, client, run_pipeline

from conftest import swell


def test_non_loopback_bind_without_token_refuses(project: Path) -> None:
    result = swell("serve", "--bind", "0.0.0.0", "--port", "1", cwd=project, timeout=30)
    assert result.returncode == 2
    assert "refusing to serve on 0.0.0.0 without a token" in result.stderr
    assert "Traceback" not in result.stderr


async def _token_rules(project: Path) -> None:
    async with client(project, token="s3cret") as http:
        assert (await http.get("/api/runs")).status_code == 401
        assert (await http.get("/")).status_code == 401
        wrong = await http.get("/api/runs", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        right = await http.get("/api/runs", headers={"Authorization": "Bearer s3cret"})
        assert right.status_code == 200
        assert (await http.get("/?token=nope")).status_code == 401
        login = await http.get("/?token=s3cret&status=failed")
        assert login.status_code == 303 and login.headers["location"] == "/?status=failed"
        assert "swell_token" in login.headers["set-cookie"]
        assert "httponly" in login.headers["set-cookie"].lower()
        # the cookie now carries the token
        assert (await http.get("/api/runs")).status_code == 200


def test_token_rules(project: Path) -> None:
    asyncio.run(_token_rules(project))


async def _csrf(project: Path, run_id: str) -> None:
    async with client(project) as http:
        missing = await http.post(f"/api/runs/{run_id}/cancel")
        assert missing.status_code == 403
        wrong = await http.post(f"/api/runs/{run_id}/cancel", headers={"X-CSRF-Token": "x"})
        assert wrong.status_code == 403
        form = await http.post(f"/runs/{run_id}/cancel", data={"csrf": "x"})
        assert form.status_code == 403
        token = (await http.get("/api/csrf")).json()["token"]
        done = await http.post(f"/api/runs/{run_id}/cancel", headers={"X-CSRF-Token": token})
        # the run ended already: a clear refusal, not a traceback
        assert done.status_code == 409 and "already succeeded" in done.json()["detail"]


def test_posts_need_the_csrf_token(project: Path) -> None:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    asyncio.run(_csrf(project, run_id))


async def _rebinding(project: Path) -> None:
    async with client(project) as http:
        evil = await http.get("/api/runs", headers={"Host": "evil.example:8765"})
        assert evil.status_code == 401
    async with client(project) as http:
        ok = await http.get("/api/runs", headers={"Host": "localhost:8765"})
        assert ok.status_code == 200


def test_loopback_without_token_checks_the_host(project: Path) -> None:
    asyncio.run(_rebinding(project))


def test_base_is_loopback() -> None:
    assert httpx.URL(BASE).host == "127.0.0.1"
