"""The Analytics page (per pipeline and period) and each run's Retro page, with their
JSON API (`/api/analytics`, `/api/runs/{run}/retro`): the numbers of `swell retro`."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from swell.retro.models import Retro, Stats
from swell.retro.run import build_retro
from swell.retro.stats import compute_stats, since_time
from swell.web.analytics_svg import Bar, column_chart, row_chart
from swell.web.state import app_state
from swell.web.views import render

api = APIRouter(prefix="/api")
pages = APIRouter(include_in_schema=False)
PERIODS = ("1d", "7d", "30d", "90d", "")  # the period links of the page ("": all time)


REPORTS = 2  # retros and stats computed at once (each reads a whole run, or many)


async def stats_for(request: Request, pipeline: str | None, since: str | None) -> Stats:
    state = app_state(request)
    start = since_time(since)
    store = state.reader.store
    # over every run of the period: in a worker thread, off the event loop
    return await state.offload.run(
        "reports", REPORTS, lambda: compute_stats(store, pipeline or None, start)
    )


async def retro_of(request: Request, run_id: str) -> Retro:
    """A run's retro, from all its events: in a worker thread, off the event loop (a
    run of 21,000 events takes about a second)."""
    state = app_state(request)
    store = state.reader.store
    return await state.offload.run("reports", REPORTS, lambda: build_retro(store, run_id))


@api.get("/analytics", response_model=Stats)
async def analytics(
    request: Request, pipeline: str | None = None, since: str | None = None
) -> Stats:
    """Numbers over the runs of `pipeline` (all: unset) created in the period `since`
    (`7d`, `12h`, a date; all time: unset), as `swell retro stats -o json` gives them."""
    return await stats_for(request, pipeline, since)


@api.get("/runs/{run_id}/retro", response_model=Retro)
async def retro(request: Request, run_id: str) -> Retro:
    """The run's retrospective, as `swell retro RUN -o json` gives it."""
    return await retro_of(request, run_id)


def charts(stats: Stats) -> dict[str, str]:
    """The page's SVG charts, oldest run on the left."""
    runs = list(reversed(stats.points))
    css = {"succeeded": "bar", "failed": "bar-failed"}
    return {
        "smoothness": column_chart(
            "smoothness per run",
            [
                Bar(f"{p.id} ({p.status})", p.smoothness, css.get(p.status, "bar-other"))
                for p in runs
            ],
        ),
        "tokens": column_chart(
            "tokens per run", [Bar(p.id, p.tokens, css.get(p.status, "bar-other")) for p in runs]
        ),
        "duration": column_chart(
            "duration per run",
            [Bar(p.id, (p.duration_ms or 0) / 1000, css.get(p.status, "bar-other")) for p in runs],
            " s",
        ),
        "visits": row_chart(
            "visits per run, by step",
            [Bar(f"{s.pipeline}/{s.step_id}", s.visits_per_run) for s in stats.steps],
        ),
        "step_tokens": row_chart(
            "tokens per visit, by step",
            [Bar(f"{s.pipeline}/{s.step_id}", s.tokens_per_visit) for s in stats.steps],
        ),
    }


@pages.get("/analytics")
async def analytics_page(request: Request) -> Response:
    q = request.query_params
    pipeline, since = q.get("pipeline") or None, q.get("since") or None
    found = await stats_for(request, pipeline, since)
    names = app_state(request).reader.pages.pipeline_names()
    return render(
        request,
        "analytics.html",
        s=found,
        charts=charts(found),
        pipelines=names,
        pipeline=pipeline or "",
        period=since or "",
        periods=PERIODS,
    )


@pages.get("/runs/{run_id}/retro")
async def retro_page(request: Request, run_id: str) -> Response:
    return render(request, "retro.html", r=await retro_of(request, run_id))
