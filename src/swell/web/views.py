"""The HTML pages: each renders one of the API's models with a Jinja2 template
(autoescape on). `?fragment=1` returns only the part live updates replace."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from swell.errors import SwellError
from swell.store.protocols import Store
from swell.web import actions, data, timeline
from swell.web.api import MAX_BUDGET, MAX_ID, Visit, graph_svg, run_filter
from swell.web.state import app_state
from swell.web.text import path_part

router = APIRouter(include_in_schema=False)
PAGE_BARS = 200  # visits the run page's timeline draws (/runs/RUN/timeline: up to 1,000)
# pages run only the package's own script and styles: were some agent output ever to
# slip through escaping, an inline script or a foreign resource would still not load
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def render(request: Request, template: str, **context: Any) -> HTMLResponse:
    state = app_state(request)
    page = state.templates.get_template(template)
    html = page.render(csrf=state.guard.csrf, message=request.query_params.get("msg"), **context)
    return HTMLResponse(html, headers={"Content-Security-Policy": CSP})


def _int(q: Any, name: str, default: int, most: int) -> int:
    """The query's number `name` (1 to `most`), the default when it is not given; a
    400 saying so for anything else (an absurd number was a 500)."""
    value = q.get(name)
    if not value:
        return default
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= most:
        raise HTTPException(
            400, f"query parameter '{name}': give a whole number from 1 to {most:,}"
        )
    return int(value)


@router.get("/")
async def runs_page(request: Request) -> Response:
    q = request.query_params
    filt = run_filter(
        q.get("pipeline"),
        q.get("status"),
        q.get("since"),
        q.get("until"),
        q.get("roots") == "1",
        q.get("q"),
        q.get("waiting") == "1",
    )
    per_page = _int(q, "per_page", data.PER_PAGE, data.MAX_PER_PAGE)
    page = _int(q, "page", 1, data.MAX_PAGE)
    found = data.runs_page(app_state(request).reader, filt, page, per_page)
    template = "runs_table.html" if q.get("fragment") else "runs.html"
    return render(request, template, runs=found, query=_query(q, drop=("page", "fragment")))


def _query(q: Any, drop: tuple[str, ...]) -> str:
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in q.items() if k not in drop and v)


@router.get("/runs/{run_id}")
async def run_page(request: Request, run_id: str) -> Response:
    q = request.query_params
    state = app_state(request)
    reader, kept = state.reader, state.offload.views
    page = _int(q, "page", 1, data.MAX_PAGE)
    run = reader.store.get_run(run_id)  # once: its last seq keys what is kept
    at = (run.id, run.last_seq)
    # a 10,000-visit run's steps and totals are sums over its visits: read once per event
    steps = kept.get(("steps", *at), lambda: reader.store.steps(run.id))
    totals = kept.get(("totals", *at), lambda: data.run_totals(reader, run))
    detail, newest = data.run_detail_and_recent(
        reader, run.id, page, data.PER_PAGE, PAGE_BARS, run, steps, totals
    )
    template = "run_live.html" if q.get("fragment") else "run.html"
    facts = state.offload.facts.get(reader.store, run.id, run.last_seq)
    # the run page draws the newest visits; /runs/RUN/timeline draws up to 1,000
    lanes = [s.step_id for s in detail.steps]

    def prepare() -> tuple[timeline.Sketch | None, int, int]:
        return timeline.prepare(
            reader.store, reader.pages, run.id, facts.marks, PAGE_BARS, lanes, newest
        )

    # kept until the run's (or a child drawn's) next event: per request only the bars
    # still going are drawn
    drawn, own, total = kept.get(("timeline", *at, *_children_seqs(reader.store, run.id)), prepare)
    gantt = (drawn.draw() if drawn else ""), own, total
    svg = await graph_svg(request, run.id, detail.steps, run)
    return render(request, template, d=detail, svg=svg, timeline=gantt, per_page=data.PER_PAGE)


def _children_seqs(store: Store, run_id: str) -> list[tuple[str, int]]:
    """The child runs a timeline draws, with their newest events' seqs: what it shows
    changes with them too."""
    return [(c.id, c.last_seq) for c in store.children(run_id)[: timeline.CHILD_LANES]]


@router.get("/runs/{run_id}/timeline")
async def timeline_page(request: Request, run_id: str) -> Response:
    state = app_state(request)
    reader = state.reader
    run = reader.store.get_run(run_id)
    facts = state.offload.facts.get(reader.store, run.id, run.last_seq)
    steps = state.offload.views.get(
        ("steps", run.id, run.last_seq), lambda: reader.store.steps(run.id)
    )
    lanes = [s.step_id for s in steps]

    def prepare() -> tuple[timeline.Sketch | None, int, int]:
        return timeline.prepare(reader.store, reader.pages, run.id, facts.marks, lanes=lanes)

    key = ("timeline-1k", run.id, run.last_seq, *_children_seqs(reader.store, run.id))
    drawn, own, total = state.offload.views.get(key, prepare)
    gantt = (drawn.draw() if drawn else ""), own, total
    return render(request, "timeline.html", run=run, timeline=gantt)


@router.get("/runs/{run_id}/visits/{step_id}/{visit}")
async def visit_page(request: Request, run_id: str, step_id: str, visit: Visit) -> Response:
    found = data.visit_detail(app_state(request).reader, run_id, step_id, visit)
    if found is None:
        raise HTTPException(404, f"run {run_id} has no visit {visit} of step '{step_id}'")
    return render(request, "visit.html", v=found)


@router.get("/runs/{run_id}/thread")
async def thread_page(request: Request, run_id: str) -> Response:
    q = request.query_params
    before = _int(q, "before", 0, MAX_ID) or None
    budget = _int(q, "budget", 8000, MAX_BUDGET)
    page = data.thread_page(
        app_state(request).reader, run_id, q.get("thread") or None, before, budget
    )
    return render(request, "thread.html", t=page, budget=budget)


@router.get("/pipelines")
async def pipelines_page(request: Request) -> Response:
    state = app_state(request)
    return render(request, "pipelines.html", p=await state.offload.pipelines(state.settings.root))


async def _form(request: Request) -> dict[str, str]:
    # urlencoded forms only (no multipart dependency); the last value of a field wins
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}


def _back(run_id: str, message: str) -> RedirectResponse:
    return RedirectResponse(f"/runs/{path_part(run_id)}?msg={quote(message)}", status_code=303)


async def _checked_form(request: Request) -> dict[str, str]:
    form = await _form(request)
    if not app_state(request).guard.csrf_ok(request, form.get("csrf")):
        raise HTTPException(403, "missing or wrong CSRF token")
    return form


@router.post("/runs/{run_id}/gates/{step_id}/{verdict}")
async def gate_form(request: Request, run_id: str, step_id: str, verdict: str) -> Response:
    form = await _checked_form(request)
    if verdict not in ("approve", "reject"):
        raise HTTPException(404)
    store = app_state(request).reader.store
    try:
        if verdict == "approve":
            done = await actions.decide(
                store, run_id, step_id, "approved", choice=form.get("choice") or None
            )
        else:
            done = await actions.decide(
                store, run_id, step_id, "rejected", reason=form.get("reason") or None
            )
    except SwellError as exc:
        return _back(run_id, f"error: {exc}")
    return _back(run_id, done.message)


@router.post("/runs/{run_id}/cancel")
async def cancel_form(request: Request, run_id: str) -> Response:
    await _checked_form(request)
    state = app_state(request)
    try:
        done = await actions.cancel(state.reader.store, state.settings.root, run_id)
    except SwellError as exc:
        return _back(run_id, f"error: {exc}")
    return _back(run_id, done.message)
