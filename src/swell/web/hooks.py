"""`POST /api/hooks/{forge}`: forge webhooks in (service/webhooks.py does the work).
The signature is the credential, not the dashboard's token (web/security.py lets
these paths through to it). The answer (202) comes once the delivery's dispatch key
and its run are recorded; the run is handed to a process of its own in the background
(GitHub gives up on an answer after 10 s). `hand_on_recorded` is how `swell serve`,
when it starts, hands on what a server killed in between left recorded."""

from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from swell.errors import SwellError
from swell.executors import launch
from swell.web.state import app_state

if TYPE_CHECKING:
    from swell.runtime import Runtime
    from swell.service.webhooks import Delivery, Outcome

router = APIRouter()
# why a delivery was refused, by the status answered
_REASONS = {401: "signature", 400: "bad_request", 404: "unknown_forge"}


@router.post("/api/hooks/{forge}", tags=["webhooks"])
async def receive_hook(forge: str, request: Request) -> JSONResponse:
    """A GitHub, GitLab or Gitea delivery: 202 with the run started, 200 when the
    delivery was seen before (its run), 401 for a bad or missing signature."""
    from swell.service.webhooks import FORGES, Refused, delivery, verify

    body = await request.body()
    state = app_state(request)
    failed = hook_failures(state.extra)
    try:
        verify(forge, request.headers, body, os.environ)
        given = delivery(forge, request.headers, body)
    except Refused as exc:
        failed[(forge if forge in FORGES else "unknown", _REASONS.get(exc.status, "refused"))] += 1
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)
    if given.event == "ping":  # sent when the webhook is set up: nothing to run
        return JSONResponse({"run_id": None, "pipeline": None, "why": "ping", "duplicate": False})
    root = state.settings.root
    try:
        outcome = await run_in_threadpool(_dispatch, root, given)
    except SwellError:  # answered by the app's handler (a store down: 503)
        failed[(forge, "error")] += 1
        raise
    if outcome.run_id is not None and not outcome.duplicate:
        launch.hand_on_later(root, outcome.run_id, launch.supervisor(state.extra))
    answer = {"run_id": outcome.run_id, "pipeline": outcome.pipeline, "why": outcome.why}
    return JSONResponse(
        answer | {"duplicate": outcome.duplicate}, 200 if outcome.duplicate else 202
    )


def hook_failures(extra: dict[str, Any]) -> Counter[tuple[str, str]]:
    """Deliveries refused or failed since this server started, by (forge, reason): in
    memory, so a restart starts from 0 (Prometheus reads that as a counter reset)."""
    found = extra.get("webhook_failures")
    if not isinstance(found, Counter):
        found = extra["webhook_failures"] = Counter()
    return found


def _dispatch(root: Path, given: Delivery) -> Outcome:
    from swell.runtime import open_runtime
    from swell.service.webhooks import dispatch_delivery

    rt = open_runtime(root)
    try:
        return dispatch_delivery(rt, given, hand_on=False)
    finally:
        rt.store.close()


def recorded_not_started(root: Path) -> list[str]:
    """Runs started by webhooks or POST /api/runs that are still pending with no
    process executing them, and runs whose resume (POST /api/runs/RUN/resume) was
    recorded: left by a server that stopped before handing them on."""
    from swell.runtime import open_runtime
    from swell.service.dispatch import orphans
    from swell.service.webhooks import FORGES

    rt = open_runtime(root)
    try:
        sources = [launch.API_SOURCE, *(f"webhook:{forge}" for forge in FORGES)]
        found = [run_id for source in sources for run_id in orphans(rt, source)]
        for run_id in launch.resumes(rt.state_dir):
            if run_id not in found and _resumable(rt, run_id):
                found.append(run_id)
            elif run_id not in found:
                launch.forget_resume(rt.state_dir, run_id)
        return found
    finally:
        rt.store.close()


def _resumable(rt: Runtime, run_id: str) -> bool:
    """Not ended, and no process executes it (one handed on before the server died
    may have taken it meanwhile)."""
    from swell.errors import RunNotFound
    from swell.runtime import FINAL

    try:
        run = rt.store.get_run(run_id)
    except RunNotFound:
        return False
    return run.status not in FINAL and rt.store.owner(run.id) is None


def hand_on_recorded(root: Path, sup: launch.Supervisor) -> list[str]:
    """Hand on, in the background, what `recorded_not_started` finds (listed now, so
    before any request of this server records a run): the runs' ids."""
    found = recorded_not_started(root)

    def go() -> None:
        for run_id in found:
            launch.hand_on(root, run_id, sup)

    threading.Thread(target=go, name="hand on recorded runs", daemon=True).start()
    return found
