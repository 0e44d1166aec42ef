"""Dispatch keys: which work item already has its run (exactly-once dispatch).

A dispatcher (`swell watch`, schedules, inbound webhooks; service/) starts a run for a
work item only through `record_run` with a `DispatchKey`: the store records the key
in the same transaction that creates the run, under a unique constraint, so a key has
at most one run whoever races for it and however a dispatcher dies (docs/service.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from swell.errors import SwellError

if TYPE_CHECKING:
    from swell.store.protocols import Store


class DispatchKey(NamedTuple):
    """One work item of one source, for one pipeline (a schedule's item is its tick)."""

    source: str  # the source's URI, e.g. `file:queue.jsonl`, `schedule:nightly`
    item: str  # the item's stable id within the source
    pipeline: str

    def text(self) -> str:
        return f"{self.source} item {self.item} -> {self.pipeline}"


@dataclass(frozen=True)
class Dispatched:
    """A dispatch key recorded with the run it started."""

    source: str
    item: str
    pipeline: str
    run_id: str
    created_at: str


@dataclass(frozen=True)
class SourceSummary:
    """One source's dispatched items, for /metrics (web/health.py)."""

    source: str
    dispatched: int  # items with a run recorded
    waiting: int  # of those, runs still pending: no process has started them yet
    oldest_waiting: str | None  # when the oldest of those was recorded (ISO time)


def summarize(rows: Iterable[Dispatched], status: Callable[[str], str]) -> list[SourceSummary]:
    """The summaries of `rows` (`status`: a run's status), for a backend without SQL."""
    found: dict[str, list[Dispatched]] = {}
    for row in rows:
        found.setdefault(row.source, []).append(row)
    out = []
    for source in sorted(found):
        waiting = [r.created_at for r in found[source] if status(r.run_id) == "pending"]
        out.append(
            SourceSummary(source, len(found[source]), len(waiting), min(waiting, default=None))
        )
    return out


class AlreadyDispatched(SwellError):
    """The work item has its run already (started by this or another dispatcher)."""


def record_run(store: Store, key: tuple[str, str, str] | None, **run: Any) -> None:
    """`store.create_run(**run)`, with `key` recorded in the same transaction when given
    (AlreadyDispatched, and nothing created, when the key has its run already)."""
    if key is None:
        store.create_run(**run)
        return
    from swell.store.capabilities import dispatch

    key = DispatchKey(*key)
    if not dispatch(store).create_dispatched_run(key, **run):
        raise AlreadyDispatched(f"{key.text()} was dispatched already")


# the table both SQL backends keep the keys in (their migrations create it)
CREATE = """
CREATE TABLE dispatches (
    source TEXT NOT NULL,
    item TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    run_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (source, item, pipeline)
)
"""
# (source, item, pipeline, run_id, created_at); `?` placeholders (SQLite's)
INSERT = (
    "INSERT INTO dispatches (source, item, pipeline, run_id, created_at) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
SELECT = (
    "SELECT source, item, pipeline, run_id, created_at FROM dispatches "
    "WHERE source = ? AND (? IS NULL OR pipeline = ?) ORDER BY created_at, item"
)


def select_args(source: str, pipeline: str | None) -> tuple[str, str | None, str | None]:
    return (source, pipeline, pipeline)


# one row per source: (source, dispatched, waiting, oldest waiting's created_at)
SUMMARY = (
    "SELECT d.source, COUNT(*), SUM(CASE WHEN r.status = 'pending' THEN 1 ELSE 0 END), "
    "MIN(CASE WHEN r.status = 'pending' THEN d.created_at END) "
    "FROM dispatches d LEFT JOIN runs r ON r.id = d.run_id GROUP BY d.source ORDER BY d.source"
)


def summary_rows(rows: Iterable[tuple[Any, ...]]) -> list[SourceSummary]:
    return [SourceSummary(str(s), int(n), int(w or 0), o) for s, n, w, o in rows]
