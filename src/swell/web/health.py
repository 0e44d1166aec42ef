"""`/healthz` and `/metrics` for swell running as a service.

- `/healthz`: 200 `{"status": "ok"}` when the store answers, else 503 with its error.
  It says nothing about runs, so it needs no token (a load balancer asks it).
- `/metrics`: Prometheus' text format (0.0.4), written here: runs by status, visits,
  the runs this server's processes execute, hook deliveries by outcome, what the
  dispatch table says per source (items, queue depth, dispatch lag: `dispatch_gauges`)
  and inbound webhook failures since the server started. A few count queries, never
  a read of every run. Behind the token like every page when one is set, which it
  must be off loopback (web/security.py).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import get_args

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from swell.errors import StoreError
from swell.events.statuses import RunStatus
from swell.executors import launch
from swell.store.capabilities import dispatch, page_reader
from swell.store.location import state_dir_for
from swell.store.pages import RunFilter
from swell.store.protocols import Capability, Store
from swell.web import live
from swell.web.hooks import hook_failures
from swell.web.state import app_state

router = APIRouter(include_in_schema=False)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HOOK_LOG = "hooks.log"  # notify/observer.py's


Block = tuple[str, str, str, list[tuple[str, float]]]  # name, type, help, samples


def dispatch_gauges(store: Store, now: datetime | None = None) -> list[Block]:
    """The dispatcher's figures from the store's dispatch table, per source (a work
    source's URI, `schedule:NAME`, `webhook:FORGE`, `api`): items dispatched, queue
    depth (their runs still pending: recorded, not started by a process yet) and
    dispatch lag (how long the oldest of those has waited). None for a store that
    keeps no dispatch keys."""
    if Capability.DISPATCH not in store.capabilities:
        return []
    now = now or datetime.now(UTC)
    rows = dispatch(store).dispatch_summary()
    lag = [(f'{{source="{_label(r.source)}"}}', _age(r.oldest_waiting, now)) for r in rows]
    return [
        (
            "swell_dispatched_items_total",
            "counter",
            "Work items (webhook deliveries, API starts, ticks) with a run recorded, by source.",
            [(f'{{source="{_label(r.source)}"}}', float(r.dispatched)) for r in rows],
        ),
        (
            "swell_dispatch_queue_depth",
            "gauge",
            "Dispatched runs no process has started yet, by source.",
            [(f'{{source="{_label(r.source)}"}}', float(r.waiting)) for r in rows],
        ),
        (
            "swell_dispatch_lag_seconds",
            "gauge",
            "Age of the oldest dispatched run not started yet (0: none waits), by source.",
            lag,
        ),
    ]


def _age(recorded: str | None, now: datetime) -> float:
    if not recorded:
        return 0.0
    try:
        then = datetime.fromisoformat(recorded.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())


def _label(value: str) -> str:
    """A label value as the text format escapes it."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def webhook_failures(failed: Counter[tuple[str, str]]) -> Block:
    """Inbound deliveries refused or failed since this server started (web/hooks.py
    counts them in memory), by forge and reason; zero for each forge's bad signature."""
    from swell.service.webhooks import FORGES

    counts = Counter({(forge, "signature"): 0 for forge in FORGES})
    counts.update(failed)
    samples = [
        (f'{{forge="{_label(f)}",reason="{_label(r)}"}}', float(n))
        for (f, r), n in sorted(counts.items())
    ]
    return (
        "swell_webhook_failures_total",
        "counter",
        "Inbound webhook deliveries refused or failed since this server started.",
        samples,
    )


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


def exposition(
    store: Store, state_dir: Path, processes: int, failed: Counter[tuple[str, str]] | None = None
) -> str:
    """Every metric, in the text format."""
    pages = page_reader(store)
    by_status = [
        (f'{{status="{s}"}}', float(pages.runs_page(RunFilter(status=s), 0, 1).total))
        for s in get_args(RunStatus)
    ]
    visits = float(pages.visits_total())
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
    for name, kind, help_text, samples in [
        *dispatch_gauges(store),
        webhook_failures(failed or Counter()),
    ]:
        blocks.append(_line(name, kind, help_text, samples))
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
    failed = Counter(hook_failures(state.extra))
    text = await anyio.to_thread.run_sync(exposition, store, state_dir, processes, failed)
    text += live.tails_of(state.extra, store).exposition()  # shared stream tails
    return PlainTextResponse(text, media_type=CONTENT_TYPE)
