"""The dashboard's forms that start runs: "Run" on a pipeline's page (built from the
pipeline's `input`: type, example, schema), "Re-run from step" on a run's page
(`swell run --from-step`), "Fork from here" and "Rewind to here" on a visit's page
(`swell fork`, `swell rewind`). Each posts to the server, which does what `POST
/api/runs` (or `.../fork`, `.../rewind`) does (executors/launch.py) and shows the run's
page; each needs the token (web/security.py), which a browser carries as the cookie
`/?token=T` sets."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import anyio.to_thread
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel

from swell.errors import SwellError
from swell.executors import launch
from swell.web.state import app_state
from swell.web.text import path_part
from swell.web.views import _checked_form, render

router = APIRouter(include_in_schema=False)


class RunForm(BaseModel):
    """What the Run form shows of a pipeline."""

    name: str
    description: str | None
    input_type: str | None
    required: bool
    example: str | None
    schema_type: str | None
    schema_description: str | None
    engine: str  # the default engine (runtime.engine, else local)
    adapters: list[str]


def run_form(root: Any, name: str) -> RunForm:
    from swell.manifest.loader import load_pipeline, load_project

    if not launch.NAME.fullmatch(name):
        raise HTTPException(404, f"no pipeline '{name}'")
    project = load_project(root)
    loaded = load_pipeline(project.root, name)
    given = loaded.pipeline.input
    schema = given.schema_
    return RunForm(
        name=loaded.name,
        description=loaded.pipeline.metadata.description,
        input_type=given.type,
        required=given.required,
        example=given.example,
        schema_type=schema.type if schema else None,
        schema_description=schema.description if schema else None,
        engine=project.manifest.runtime.engine or "local",
        adapters=sorted(project.manifest.adapters),
    )


@router.get("/pipelines/{name}")
async def pipeline_page(request: Request, name: str) -> Response:
    state = app_state(request)
    form = await anyio.to_thread.run_sync(run_form, state.settings.root, name)
    return render(request, "pipeline.html", f=form, may_start=state.guard.may_start(request))


def _to(path: str, message: str) -> RedirectResponse:
    return RedirectResponse(f"{path}?msg={quote(message)}", status_code=303)


async def _start(request: Request, body: launch.StartRun, back: str) -> Response:
    state = app_state(request)
    if not state.guard.may_start(request):
        raise HTTPException(401, "starting runs needs the token: open /?token=T once")
    sup = launch.supervisor(state.extra)
    try:
        started = await anyio.to_thread.run_sync(launch.start, state.settings.root, body, sup)
    except SwellError as exc:
        return _to(back, f"error: {exc}")
    return _to(f"/runs/{path_part(started.run_id)}", f"started run {started.run_id}")


@router.post("/pipelines/{name}/run")
async def run_form_post(request: Request, name: str) -> Response:
    form = await _checked_form(request)
    body = launch.StartRun(
        pipeline=name,
        input=form.get("input") or None,
        adapter=form.get("adapter") or None,
        model=form.get("model") or None,
        engine=form.get("engine") or None,
    )
    return await _start(request, body, f"/pipelines/{path_part(name)}")


@router.post("/runs/{run_id}/rerun")
async def rerun_form_post(request: Request, run_id: str) -> Response:
    form = await _checked_form(request)
    run = app_state(request).reader.store.get_run(run_id)
    step = form.get("step") or ""
    if not step:
        return _to(f"/runs/{path_part(run.id)}", "error: choose the step to re-run from")
    body = launch.StartRun(pipeline=run.pipeline, from_step=step, from_run=run.id)
    return await _start(request, body, f"/runs/{path_part(run.id)}")


def context_lines(text: str) -> dict[str, str]:
    """The fork form's context: one KEY=VALUE a line (blank lines skipped)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, eq, value = line.partition("=")
        if not eq or not key.strip():
            raise launch.BadStart(f"context line {line.strip()!r}: give KEY=VALUE")
        found[key.strip()] = value
    return found


@router.post("/runs/{run_id}/fork")
async def fork_form_post(request: Request, run_id: str) -> Response:
    form = await _checked_form(request)
    state = app_state(request)
    back = f"/runs/{path_part(run_id)}"
    if not state.guard.may_start(request):
        raise HTTPException(401, "forking runs needs the token: open /?token=T once")
    sup = launch.supervisor(state.extra)
    try:
        body = launch.ForkRun(
            at=form.get("at") or "",
            input=form.get("input") or None,
            context=context_lines(form.get("context") or ""),
        )
        started = await anyio.to_thread.run_sync(
            launch.fork, state.settings.root, run_id, body, sup
        )
    except SwellError as exc:
        return _to(back, f"error: {exc}")
    return _to(f"/runs/{path_part(started.run_id)}", f"forked {run_id} at {body.at}")


@router.post("/runs/{run_id}/rewind")
async def rewind_form_post(request: Request, run_id: str) -> Response:
    form = await _checked_form(request)
    state = app_state(request)
    back = f"/runs/{path_part(run_id)}"
    if not state.guard.may_start(request):
        raise HTTPException(401, "rewinding runs needs the token: open /?token=T once")
    sup = launch.supervisor(state.extra)
    body = launch.RewindRun(to=form.get("to") or "")
    try:
        await anyio.to_thread.run_sync(launch.rewind, state.settings.root, run_id, body, sup)
    except SwellError as exc:
        return _to(back, f"error: {exc}")
    return _to(back, f"rewound {run_id} to {body.to}")
