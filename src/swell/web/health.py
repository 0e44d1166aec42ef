"""`/healthz` and `/metrics` for swell running as a service.

- `/healthz`: 200 `{"status": "ok"}` when the store answers, else 503 with its error.
  It says nothing about runs, so it needs no token (a load balancer asks it).
- `/metrics`: Prometheus' text format (0.0.4), written here: runs by status, visits,
  the runs this server's processes execute, hook deliveries by outcome, and what the
  dispatcher keeps (queue depth, dispatch lag, inbound webhook failures) once its
  table exists (`dispatch_gauges`). Behind the token like every page when one is set,
  which it must be off loopback (web/security.py).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import get_args

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from swell.errors import StoreError
from swell.events.statuses import RunStatus
from swell.executors import launch
from swell.store.capabilities import page_reader
from swell.store.location import state_dir_for
from swell.store.pages import RunFilter
from swell.store.protocols import Store
from swell.web.state import app_state

router = APIRouter(include_in_schema=False)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HOOK_LOG = "hooks.log"  # notify/observer.py's


def dispatch_gauges(store: Store) -> dict[str, tuple[str, str, float]]:
    """The dispatcher's figures: `{metric name: (type, help, value)}` — queue depth
    (`swell_dispatch_queue_depth`), dispatch lag (`swell_dispatch_lag_seconds`) and
    inbound webhook failures (`swell_webhook_failures_total`), read from the store's
    dispatch table. Empty (the metrics are absent) until that table exists: the
    dispatch work (swell/sources) fills this function in."""
    return {}


def hook_deliveries(state_dir: Path) -> Counter[str]:
    """Hook deliveries by outcome (`delivered`, `failed`), from `.swell/hooks.log`."""
    counts: Counter[str] = Counter(delivered=0, failed=0)
    try:
        text = (state_dir / HOOK_LOG).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return counts
    for line in text.splitlines():
        try:
            ok = json.loads(line).get("ok")
        except (ValueError, AttributeError):
            continue
        counts["delivered" if ok else "failed"] += 1
    return counts


def _line(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> str:
    out = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    out += [f"{name}{labels} {value:g}" for labels, value in samples]
    return "\n".join(out)


def exposition(store: Store, state_dir: Path, processes: int) -> str:
    """Every metric, in the text format."""
    pages = page_reader(store)
    by_status = [
        (f'{{status="{s}"}}', float(pages.runs_page(RunFilter(status=s), 0, 1).total))
        for s in get_args(RunStatus)
    ]
    visits = float(sum(r.visits for r in store.list_runs(-1, True)))
    hooks = hook_deliveries(state_dir)
    blocks = [
        _line("swell_runs", "gauge", "Runs in the store by status.", by_status),
        _line("swell_visits_total", "counter", "Visits of every run's steps.", [("", visits)]),
        _line(
            "swell_server_run_processes",
            "gauge",
            "Run processes this server started that are still going.",
            [("", float(processes))],
        ),
        _line(
            "swell_hook_deliveries_total",
            "counter",
            "Hook notifications by how they ended (failed: gave up after its tries).",
            [(f'{{outcome="{k}"}}', float(v)) for k, v in sorted(hooks.items())],
        ),
    ]
    for name, (kind, help_text, value) in dispatch_gauges(store).items():
        blocks.append(_line(name, kind, help_text, [("", value)]))
    return "\n".join(blocks) + "\n"


@router.get("/healthz")
async def healthz(request: Request) -> Response:
    store = app_state(request).reader.store
    try:
        await anyio.to_thread.run_sync(lambda: store.list_runs(1))
    except StoreError as exc:
        return JSONResponse({"status": "unavailable", "detail": str(exc)}, status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    state = app_state(request)
    store = state.reader.store
    processes = len(launch.supervisor(state.extra).running)
    state_dir = state_dir_for(state.settings.root)
    text = await anyio.to_thread.run_sync(exposition, store, state_dir, processes)
    return PlainTextResponse(text, media_type=CONTENT_TYPE)
