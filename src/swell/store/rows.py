"""The rows every store backend returns: plain dataclasses, the same for all backends.

Backends keep JSON-valued columns (a run's options, a gate's choices, a round's
metadata, a review's issues and suggestions) as JSON text and decode them on the way
out with `row_from`, so every read returns fresh objects and every backend normalises
values the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    # types only: readers such as `swell thread` stay clear of the pydantic event models
    from swell.events.models import Event, GateVerdict, Outcome, RunStatus

Limit = int | None  # how many rows a read returns at most (its SQL LIMIT); None: all
VisitStatus = Literal["running", "succeeded", "failed", "interrupted"]
GateStatus = Literal["waiting", "approved", "rejected", "timeout", "cancelled"]


def sql_limit(limit: Limit) -> int | None:
    """A LIMIT for Postgres (None: `LIMIT NULL`, all rows); SQLite's is `or -1`."""
    return None if limit is None else max(limit, 0)


def json_lines(events: list[Event]) -> list[str]:
    """Events as `raw_events` gives them (NDJSON lines: every field, unset ones null)."""
    from swell.events.models import event_json  # only readers of JSON load the models

    return [event_json(event) for event in events]


class StoredRow(NamedTuple):
    """One stored event as the store keeps it: its envelope, and its `event_data` (the
    rest of its fields as JSON, defaults left out); `stored_event` or `views.view`
    make it an event again."""

    seq: int
    ts: str
    type: str
    step_id: str | None
    visit: int | None
    data: str

    def envelope(self, run_id: str) -> dict[str, Any]:
        """The envelope fields of the event this row of run `run_id` holds."""
        return {
            "run_id": run_id,
            "seq": self.seq,
            "ts": self.ts,
            "step_id": self.step_id,
            "visit": self.visit,
        }

    def event(self, run_id: str) -> Event:
        """The event this row of run `run_id` holds."""
        from swell.events.models import stored_event

        return stored_event(self.type, self.data, **self.envelope(run_id))


def stored_page(
    log: Mapping[int, Mapping[str, Any]], after_seq: int, limit: Limit
) -> list[StoredRow]:
    """The in-memory store's events (records by seq) after `after_seq`, at most `limit`."""
    seqs = sorted(seq for seq in log if seq > after_seq)[: sql_limit(limit)]
    return [
        StoredRow(seq, r["ts"], r["type"], r["step_id"], r["visit"], r["data"])
        for seq, r in ((seq, log[seq]) for seq in seqs)
    ]


@dataclass(frozen=True)
class Owner:
    """The process executing a run."""

    pid: int
    host: str


@dataclass
class RunRow:
    id: str
    pipeline: str
    status: RunStatus
    input: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    updated_at: str | None
    error: str | None
    visits: int  # finished visits so far while the run goes on; the final count once it ended
    last_seq: int  # the newest event's seq, 0 before the first
    parent_run_id: str | None
    parent_step_id: str | None
    workspace: str | None
    pipeline_path: str | None
    project_root: str | None
    owner_pid: int | None  # the last process that executed it (alive or not: `Store.owner`)
    owner_host: str | None
    options: dict[str, Any]


@dataclass
class VisitRow:
    step_id: str
    visit: int
    kind: str | None
    status: VisitStatus
    outcome: Outcome | None
    exit_code: int | None
    error: str | None
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    adapter: str | None  # an agent visit's, once it ran (None for other kinds)
    model: str | None


@dataclass
class StepRow:
    """A step's visits in a run: how many, and how the last one went."""

    step_id: str
    visits: int  # visits started (interrupted and running ones too)
    last_visit: int
    last_status: VisitStatus
    last_exit_code: int | None
    last_started_at: str | None = None  # when the last visit started (its elapsed time)
    cost_usd: float = 0.0  # of all its visits
    last_model: str | None = None  # the model its last visit ran on (agent steps)


@dataclass
class ArtifactRow:
    step_id: str  # "" for artifacts of the run rather than of a step
    visit: int  # 0 likewise
    name: str
    path: str
    sha256: str
    size: int
    type: str | None


@dataclass
class RoundRow:
    id: int  # the run-wide round number, or the thread's own when a thread is asked for
    role: str | None
    ts: str
    metadata: dict[str, Any]
    content: str
    thread: str | None


@dataclass
class GateRow:
    run_id: str
    step_id: str
    visit: int
    gate_type: str
    status: GateStatus  # `waiting` until the run acts on a decision (or the visit ends)
    message: str | None
    choices: list[dict[str, Any]]  # {"key", "label", "target"} each
    deadline: str | None
    decision: GateVerdict | None  # set by a person's decision before the run picks it up
    choice: str | None
    reason: str | None
    decided_by: str | None


@dataclass
class ReviewRow:
    step_id: str
    visit: int
    contract: int  # the contract's index in its step
    for_step: str | None
    reviewer: str
    adapter: str | None
    model: str | None
    verdict: str | None  # None when the reviewer could not give one
    issues: list[dict[str, Any]]
    suggestions: list[str]
    confidence: float | None
    summary: str | None
    error: str | None
    tokens_in: int
    tokens_out: int
    cost_usd: float
    duration_ms: int
    ts: str


# columns stored as JSON text, and what an empty one reads as
JSON_COLUMNS: dict[str, Callable[[], Any]] = {
    "options": dict,
    "choices": list,
    "metadata": dict,
    "issues": list,
    "suggestions": list,
}

R = TypeVar("R", bound="DataclassInstance")
_NAMES: dict[type[Any], tuple[str, ...]] = {}


def row_from(cls: type[R], columns: Mapping[str, Any]) -> R:
    """A row of `cls` from a backend's columns by name; JSON columns are decoded."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    values = {}
    for name in names:
        value = columns[name]
        if name in JSON_COLUMNS:
            value = json.loads(value) if value else JSON_COLUMNS[name]()
        values[name] = value
    return cls(**values)
