"""`POST /api/hooks/{forge}`: forge webhooks in (service/webhooks.py does the work).
The signature is the credential, not the dashboard's token (web/security.py lets
these paths through to it); the run starts off the event loop, executed by its engine
in a process of its own, never inside the request."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from swell.web.state import app_state

if TYPE_CHECKING:
    from swell.service.webhooks import Delivery, Outcome

router = APIRouter()


@router.post("/api/hooks/{forge}", tags=["webhooks"])
async def receive_hook(forge: str, request: Request) -> JSONResponse:
    """A GitHub, GitLab or Gitea delivery: 202 with the run started, 200 when the
    delivery was seen before (its run), 401 for a bad or missing signature."""
    from swell.service.webhooks import Refused, delivery, verify

    body = await request.body()
    try:
        verify(forge, request.headers, body, os.environ)
        given = delivery(forge, request.headers, body)
    except Refused as exc:
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)
    if given.event == "ping":  # sent when the webhook is set up: nothing to run
        return JSONResponse({"run_id": None, "pipeline": None, "why": "ping", "duplicate": False})
    root = app_state(request).settings.root
    outcome = await run_in_threadpool(_dispatch, root, given)
    answer = {"run_id": outcome.run_id, "pipeline": outcome.pipeline, "why": outcome.why}
    return JSONResponse(
        answer | {"duplicate": outcome.duplicate}, 200 if outcome.duplicate else 202
    )


def _dispatch(root: Path, given: Delivery) -> Outcome:
    from swell.runtime import open_runtime
    from swell.service.webhooks import dispatch_delivery

    rt = open_runtime(root)
    try:
        return dispatch_delivery(rt, given)
    finally:
        rt.store.close()
