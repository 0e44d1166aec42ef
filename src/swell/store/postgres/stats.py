"""`retro stats` added up in Postgres's SQL (the shared queries of store/stats.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swell.store.pages import RunFilter
from swell.store.stats import Dialect, StatsSource, sql_stats


def postgres_dialect() -> Dialect:
    events = (
        "SELECT e.run_id, e.seq, e.ts, e.type, e.step_id, e.visit, e.data "
        "FROM events e JOIN sel ON sel.id = e.run_id "
        "WHERE e.type IN ({types}) ORDER BY e.run_id, e.seq"
    )
    return Dialect("%s", events, int, str)


def postgres_stats(
    execute: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]], filt: RunFilter
) -> StatsSource:
    """`PostgresStore.stats_source`: `execute` runs one query and returns its rows."""
    return sql_stats(execute, postgres_dialect(), filt)
