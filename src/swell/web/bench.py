"""A bench's report in the dashboard: `/bench/{bench}` (the page `swell bench report
-o html` prints, bars in SVG) and `/api/bench/{bench}` (its JSON)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from swell.bench.html import report_html
from swell.bench.records import find_bench
from swell.bench.report import BenchReport, build_report
from swell.web.state import app_state

router = APIRouter()


async def _report(request: Request, bench_id: str, compare: str | None) -> BenchReport:
    state = app_state(request)
    store = state.reader.store

    def build() -> BenchReport:
        other = find_bench(store, compare) if compare else None
        return build_report(store, find_bench(store, bench_id), other=other)

    # a retro per task's run: in a worker thread, off the event loop
    return await state.offload.run("reports", 2, build)


@router.get("/api/bench/{bench_id}", response_model=BenchReport)
async def bench_json(request: Request, bench_id: str, compare: str | None = None) -> BenchReport:
    """A bench's report, as `swell bench report BENCH -o json` gives it."""
    return await _report(request, bench_id, compare)


@router.get("/bench/{bench_id}", response_class=HTMLResponse, include_in_schema=False)
async def bench_page(request: Request, bench_id: str, compare: str | None = None) -> HTMLResponse:
    return HTMLResponse(report_html(await _report(request, bench_id, compare)))
