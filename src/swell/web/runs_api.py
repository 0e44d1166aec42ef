"""Starting, resuming, forking and rewinding runs over HTTP (`POST /api/runs`,
`POST /api/runs/{id}/resume`, `.../fork`, `.../rewind`).

Both run agents, so both need the dashboard's token, on loopback too (web/security.py);
a missing or wrong one is a 401 and nothing is recorded. A token sent as a cookie (a
browser) needs the CSRF token as well; one sent in `Authorization` does not.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, HTTPException, Request

from swell.executors import launch
from swell.web.models import Problem
from swell.web.state import app_state

router = APIRouter(prefix="/api")

NO_TOKEN = (
    "starting or resuming a run needs the dashboard's token (Authorization: Bearer T); "
    "`swell serve` prints it, or set it with --token / SWELL_SERVE_TOKEN"
)


def _problem(description: str) -> dict[str, Any]:
    return {"model": Problem, "description": description}


ANSWERS: dict[int | str, dict[str, Any]] = {
    400: _problem("the request cannot start a run (bad input, unknown adapter, ...): `detail`"),
    401: _problem("no token, or the wrong one: nothing was started"),
    403: _problem("the token came as a cookie without the CSRF token"),
    404: _problem("no such pipeline or run"),
    409: _problem("the run cannot be resumed (it ended, or something executes it)"),
}
TRAVEL_ANSWERS: dict[int | str, dict[str, Any]] = {
    **ANSWERS,
    400: _problem("STEP#VISIT names no visit with a checkpoint, or a bad context key"),
    409: _problem("the visit has not finished, or a process executes the run (rewind)"),
}


def require_starter(request: Request) -> None:
    guard = app_state(request).guard
    if not guard.may_start(request):
        raise HTTPException(401, NO_TOKEN)
    if not guard.by_header(request) and not guard.csrf_ok(request, None):
        raise HTTPException(403, "missing or wrong CSRF token (X-CSRF-Token; see /api/csrf)")


@router.post("/runs", status_code=202, response_model=launch.RunStarted, responses=ANSWERS)
async def start_run(request: Request, body: launch.StartRun) -> launch.RunStarted:
    """Start a run of a pipeline, as `swell run` does; it is executed by the chosen
    engine (local: a process the server supervises; temporal: the engine's workers),
    never inside this request. The answer comes once the run is recorded and going."""
    require_starter(request)
    state = app_state(request)
    sup = launch.supervisor(state.extra)
    return await anyio.to_thread.run_sync(launch.start, state.settings.root, body, sup)


@router.post(
    "/runs/{run_id}/resume", status_code=202, response_model=launch.RunStarted, responses=ANSWERS
)
async def resume_run(request: Request, run_id: str) -> launch.RunStarted:
    """Continue a stopped run (after a crash, an interruption, or a gate decision with
    nobody executing it), as `swell resume` does, in a process the server supervises.
    The answer comes once the resume is checked and recorded, before that process
    starts; a server stopped before handing it on does so when it starts again."""
    require_starter(request)
    state = app_state(request)
    sup = launch.supervisor(state.extra)
    return await anyio.to_thread.run_sync(launch.resume, state.settings.root, run_id, sup)


@router.post(
    "/runs/{run_id}/fork",
    status_code=202,
    response_model=launch.RunStarted,
    responses=TRAVEL_ANSWERS,
)
async def fork_run(request: Request, run_id: str, body: launch.ForkRun) -> launch.RunStarted:
    """A new run that starts where visit `at` of this run left off, as `swell fork`
    does: the origin's events up to it copied (not run again), its workspace that
    visit's checkpoint, `input` and `context` changed as given; then continued in a
    process the server supervises. The answer names the new run."""
    require_starter(request)
    state = app_state(request)
    sup = launch.supervisor(state.extra)
    return await anyio.to_thread.run_sync(launch.fork, state.settings.root, run_id, body, sup)


@router.post(
    "/runs/{run_id}/rewind",
    status_code=202,
    response_model=launch.RunStarted,
    responses=TRAVEL_ANSWERS,
)
async def rewind_run(request: Request, run_id: str, body: launch.RewindRun) -> launch.RunStarted:
    """Take the run back to where visit `to` left off and continue it from there, as
    `swell rewind` does; the later visits stay in its log, abandoned."""
    require_starter(request)
    state = app_state(request)
    sup = launch.supervisor(state.extra)
    return await anyio.to_thread.run_sync(launch.rewind, state.settings.root, run_id, body, sup)
