"""The JSON API (`/api/...`): every page's data, the live streams, the actions.
FastAPI builds its OpenAPI description (`/openapi.json`, `/docs`) from these."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Header, HTTPException, Path, Query, Request
from fastapi.responses import Response, StreamingResponse

from swell.store.pages import RunFilter
from swell.store.protocols import Store
from swell.store.rows import ArtifactRow, RunRow
from swell.store.rules import MAX_SEQ
from swell.web import actions, data, live
from swell.web import models as m
from swell.web.artifacts import read_version
from swell.web.graph import CHIPS, RunState
from swell.web.offload import Offload
from swell.web.state import app_state
from swell.workspace.versions import Changed, run_dir_of

router = APIRouter(prefix="/api")
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
# bounds of every number a request carries: an absurd one is a 400 saying so, never a
# number the store cannot hold (99999999999999999999 was a 500)
MAX_ID = 2**62  # a stored output chunk's or round's id
MAX_BUDGET = 1_000_000  # characters of a thread page
Visit = Annotated[int, Path(ge=0, le=MAX_SEQ, description="the visit number")]
Page = Annotated[int, Query(ge=1, le=data.MAX_PAGE)]
PerPage = Annotated[int, Query(ge=1, le=data.MAX_PER_PAGE)]


def run_filter(
    pipeline: str | None,
    status: str | None,
    since: str | None,
    until: str | None,
    roots: bool,
    text: str | None = None,
    waiting: bool = False,
) -> RunFilter:
    return RunFilter(
        text=(text or "").strip()[:200] or None,
        waiting=waiting,
        pipeline=pipeline or None,
        status=status or None,
        since=since or None,
        until=_day_end(until) if until else None,
        include_children=not roots,
    )


def _day_end(until: str) -> str:
    """A date picker's `until` (a day) includes that whole day: the stored times it is
    compared with are longer strings of the same form (`2026-11-28T10:00:00Z`)."""
    return f"{until}T99" if len(until) == 10 else until


@router.get("/runs", response_model=m.RunsPage)
async def runs(
    request: Request,
    pipeline: str | None = None,
    status: str | None = None,
    since: str | None = None,
    until: str | None = None,
    roots: bool = False,
    q: Annotated[str | None, Query(description="a run id prefix, or text in the input")] = None,
    waiting: Annotated[bool, Query(description="only runs waiting at a gate")] = False,
    page: Page = 1,
    per_page: PerPage = data.PER_PAGE,
) -> m.RunsPage:
    filt = run_filter(pipeline, status, since, until, roots, q, waiting)
    return data.runs_page(app_state(request).reader, filt, page, per_page)


@router.get("/runs/{run_id}", response_model=m.RunDetail)
async def run(
    request: Request,
    run_id: str,
    page: Page = 1,
    per_page: PerPage = data.PER_PAGE,
) -> m.RunDetail:
    return data.run_detail(app_state(request).reader, run_id, page, per_page)


@router.get("/runs/{run_id}/visits/{step_id}/{visit}", response_model=m.VisitDetail)
async def visit(request: Request, run_id: str, step_id: str, visit: Visit) -> m.VisitDetail:
    found = data.visit_detail(app_state(request).reader, run_id, step_id, visit)
    if found is None:
        raise HTTPException(404, f"run {run_id} has no visit {visit} of step '{step_id}'")
    return found


@router.get("/runs/{run_id}/visits/{step_id}/{visit}/output")
async def visit_output(
    request: Request,
    run_id: str,
    step_id: str,
    visit: Visit,
    after: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """A visit's output as it is stored (SSE: `output` events, then `end`); the
    chunk's id is the event id, so a reconnect resumes after the last one."""
    store = app_state(request).reader.store
    run = store.get_run(run_id)
    start = live.start_seq(last_event_id, after)
    return StreamingResponse(
        live.visit_output(store, run.id, step_id, visit, start, request),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )


@router.get("/runs/{run_id}/thread", response_model=m.ThreadPage)
async def thread(
    request: Request,
    run_id: str,
    thread: str | None = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    budget: Annotated[int, Query(ge=1, le=MAX_BUDGET)] = 8000,
) -> m.ThreadPage:
    """One page of the run's rounds, as `swell thread` shows them (same retrieval)."""
    return data.thread_page(app_state(request).reader, run_id, thread, before, budget)


async def graph_svg(
    request: Request,
    run_id: str,
    steps: list[m.StepSummary] | None = None,
    run_row: RunRow | None = None,
) -> str | None:
    """The run's graph, laid out in a worker thread (web/offload.py); `steps` and
    `run_row`: the run's steps and row when the caller has read them already."""
    state = app_state(request)
    store = state.reader.store
    run_row = run_row or store.get_run(run_id)
    text = store.pipeline_text(run_row.id)
    if not text:
        return None
    facts = state.offload.facts.get(store, run_row.id, run_row.last_seq)
    drawn = run_state(store, run_row, facts.taken, steps)
    drawn.child_steps = child_steps(state.offload, store, drawn.children)
    return await state.offload.graph_svg(text, run_row.pipeline, drawn)


def child_steps(
    offload: Offload, store: Store, children: dict[str, list[tuple[str, str]]]
) -> dict[str, list[tuple[str, str, int]]]:
    """The steps of the child runs a group shows inline (its first CHIPS): every step
    of the child's pipeline in its order, with its state and visits so far."""
    out: dict[str, list[tuple[str, str, int]]] = {}
    for runs in children.values():
        for run_id, _ in runs[:CHIPS]:
            ran = {s.step_id: s for s in store.steps(run_id)}
            child = store.get_run(run_id)
            text = store.pipeline_text(run_id)
            graph = offload.graph_of(text, child.pipeline) if text else None
            order = [n.id for n in graph.nodes if n.kind != "end"] if graph else []
            order += [s for s in ran if s not in order]
            out[run_id] = [
                (s, ran[s].last_status if s in ran else "", ran[s].visits if s in ran else 0)
                for s in order
            ]
    return out


def run_state(
    store: Store,
    run_row: RunRow,
    taken: set[tuple[str, str]],
    steps: list[m.StepSummary] | None = None,
) -> RunState:
    """What the graph draws over the pipeline: visits and states by step, the gates
    waiting, the routes, choices and reworks taken (`taken`), the child runs by step."""
    run_id = run_row.id
    if steps is None:
        steps = [data.step_summary(s) for s in store.steps(run_id)]
    children: dict[str, list[tuple[str, str]]] = {}
    for child in store.children(run_id):
        children.setdefault(child.parent_step_id or "", []).append((child.id, child.status))
    ended = None
    if run_row.status in data.FINAL:
        ended = "_complete" if run_row.status == "succeeded" else "_fail"
    return RunState(
        run_id=run_id,
        visits={s.step_id: s.visits for s in steps},
        status={s.step_id: s.last_status for s in steps},
        waiting={
            g.step_id for g in store.gates(run_id) if g.status == "waiting" and not g.decision
        },
        taken=taken,
        children=children,
        ended=ended,
        forks=fork_points(data.lineage(store, run_id)),
    )


def fork_points(lineage: m.Lineage) -> dict[str, str]:
    """The steps the graph marks as fork points: where this run was forked from its
    origin, and where forks were made of it."""
    out: dict[str, list[str]] = {}
    origin = lineage.forked_from
    if origin is not None:
        out[origin.step_id] = [f"forked here from {origin.run_id} (#{origin.visit})"]
    for f in lineage.forks:
        out.setdefault(f.step_id, []).append(f"fork {f.run_id} made here (#{f.visit})")
    return {step: "; ".join(notes) for step, notes in out.items()}


@router.get("/runs/{run_id}/graph.svg", response_class=Response)
async def graph(request: Request, run_id: str) -> Response:
    """The pipeline as the run stored it at its start, with visit counts per step."""
    svg = await graph_svg(request, run_id)
    if svg is None:
        raise HTTPException(404, "the run kept no readable copy of its pipeline")
    return Response(svg, media_type="image/svg+xml")


@router.get("/runs/{run_id}/timeline.svg", response_class=Response)
async def timeline_svg(request: Request, run_id: str) -> Response:
    """The run's visits on a time axis (the newest 1,000), a lane per step."""
    from swell.web import timeline

    reader = app_state(request).reader
    run_row = reader.store.get_run(run_id)
    facts = app_state(request).offload.facts.get(reader.store, run_row.id)
    svg, _, _ = timeline.for_run(reader.store, reader.pages, run_row.id, facts.marks)
    return Response(svg or "<svg xmlns='http://www.w3.org/2000/svg'/>", media_type="image/svg+xml")


@router.get("/runs/{run_id}/artifacts/{step_id}/{visit}/{name}", response_class=Response)
async def artifact(
    request: Request, run_id: str, step_id: str, visit: Visit, name: str
) -> Response:
    """An artifact's file, only where the store recorded it inside the run's workspace.
    Served as plain text or bytes to download, never as a page of its own."""
    reader = app_state(request).reader
    run_row = reader.store.get_run(run_id)
    row = reader.pages.artifact(run_row.id, ("" if step_id == "_" else step_id, visit), name)
    if row is None:
        raise HTTPException(404, "no such artifact")
    body = await _version_bytes(request, run_row, row)
    headers = {"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"}
    try:
        body.decode("utf-8")
        return Response(body, media_type="text/plain; charset=utf-8", headers=headers)
    except UnicodeDecodeError:
        headers["Content-Disposition"] = "attachment"
        return Response(body, media_type="application/octet-stream", headers=headers)


@router.get(
    "/runs/{run_id}/visits/{step_id}/{visit}/diff",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "a unified diff"}},
)
async def visit_diff(
    request: Request, run_id: str, step_id: str, visit: Visit, stat: bool = False
) -> Response:
    """What the visit changed in its workspace, from its checkpoint (docs/time-travel.md):
    a unified diff, or with `stat=true` the files changed; empty when it changed nothing."""
    import asyncio

    from swell.ops.checkpoints import At, NoCheckpoint, diff
    from swell.store.location import state_dir_for

    reader = app_state(request).reader
    run_row = reader.store.get_run(run_id)
    state_dir = state_dir_for(FilePath(run_row.project_root or app_state(request).settings.root))
    try:
        text = await asyncio.to_thread(
            diff, reader.store, state_dir, run_row.id, At(step_id, visit), stat
        )
    except NoCheckpoint as exc:
        raise HTTPException(404, str(exc)) from None
    headers = {"Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"}
    return Response(text, media_type="text/plain; charset=utf-8", headers=headers)


async def _version_bytes(request: Request, run_row: RunRow, row: ArtifactRow) -> bytes:
    """The visit's own bytes of the artifact; 409 when the run no longer holds them."""
    root = run_row.project_root or app_state(request).settings.root
    run_dir = run_dir_of(run_row.id, root)
    try:
        return read_version(run_row.workspace, row.path, row.sha256, run_dir)
    except Changed as exc:
        raise HTTPException(409, str(exc)) from None


EVENTS_PAGE = 1000  # events one request returns at most


def known_run(reader: data.Reader, run_id: str) -> str:
    """The id of the run `run_id` names (a prefix too; 404 when none): an indexed look
    for a whole id, not `get_run`, which counts a running run's visits."""
    if reader.pages.head(run_id) is not None:
        return run_id
    return reader.store.get_run(run_id).id


@router.get(
    "/runs/{run_id}/events",
    response_class=Response,
    responses={200: {"content": {"application/json": {}}, "description": "a JSON array"}},
)
async def events(
    request: Request,
    run_id: str,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    limit: Annotated[int, Query(ge=1, le=EVENTS_PAGE)] = EVENTS_PAGE,
) -> Response:
    """The run's events after seq `after` (at most `limit`, 1000), as `swell logs -o json`
    has them: one page read from the store, sent as the stored JSON lines."""
    reader = app_state(request).reader
    lines = reader.store.raw_events(known_run(reader, run_id), after, limit=limit)
    return Response(f"[{','.join(lines)}]", media_type="application/json")


@router.get("/runs/{run_id}/stream")
async def stream(
    request: Request,
    run_id: str,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
    batch: bool = False,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Server-Sent Events: the run's events as they are stored; `id` is the seq.
    `batch=1`: one `batch` message (a JSON array) per 50 ms window at most."""
    state = app_state(request)
    store = state.reader.store
    start = live.start_seq(last_event_id, after)
    tails = live.tails_of(state.extra, store)
    return StreamingResponse(
        live.run_events(store, known_run(state.reader, run_id), start, request, tails, batch),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )


@router.get("/stream")
async def runs_stream(request: Request) -> StreamingResponse:
    """Server-Sent Events: a `runs` event whenever the newest runs change."""
    return StreamingResponse(
        live.runs_changes(app_state(request).reader.store, request),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )


@router.get("/pipelines", response_model=m.Pipelines)
async def pipelines(request: Request) -> m.Pipelines:
    """`swell validate` of the project, run in a worker thread (web/offload.py)."""
    state = app_state(request)
    return await state.offload.pipelines(state.settings.root)


@router.get("/csrf", response_model=m.CsrfToken)
async def csrf(request: Request) -> m.CsrfToken:
    """The token every POST carries in `X-CSRF-Token` (readable only by who may read
    the API: the browser keeps other sites from reading it)."""
    return m.CsrfToken(token=app_state(request).guard.csrf)


def require_csrf(request: Request) -> None:
    guard = app_state(request).guard
    if guard.by_header(request):  # a token in a header: no other site's page sent it
        return
    if not guard.csrf_ok(request, None):
        raise HTTPException(403, "missing or wrong CSRF token (X-CSRF-Token; see /api/csrf)")


@router.post("/runs/{run_id}/gates/{step_id}/approve", response_model=m.ActionResult)
async def approve(
    request: Request, run_id: str, step_id: str, body: m.GateDecision | None = None
) -> m.ActionResult:
    require_csrf(request)
    store = app_state(request).reader.store
    choice = body.choice if body else None
    return await actions.decide(store, run_id, step_id, "approved", choice=choice)


@router.post("/runs/{run_id}/gates/{step_id}/reject", response_model=m.ActionResult)
async def reject(
    request: Request, run_id: str, step_id: str, body: m.GateDecision | None = None
) -> m.ActionResult:
    require_csrf(request)
    store = app_state(request).reader.store
    reason = body.reason if body else None
    return await actions.decide(store, run_id, step_id, "rejected", reason=reason)


@router.post("/runs/{run_id}/cancel", response_model=m.ActionResult)
async def cancel(request: Request, run_id: str) -> m.ActionResult:
    require_csrf(request)
    state = app_state(request)
    return await actions.cancel(state.reader.store, state.settings.root, run_id)
