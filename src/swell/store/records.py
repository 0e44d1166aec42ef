"""The rows events add to the store's tables, built once for every backend.

Each builder is the row one event kind adds (or replaces) in a table, keyed by the
table's primary key (`PRIMARY_KEYS`); every column is given, so a backend stores the
record as it is. JSON-valued columns are JSON text here (see `rows.JSON_COLUMNS`).
Which event adds which row, and what changes rows already there, is each backend's
fold (projections.py for SQL, memory/tables.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swell.events.models import (
        ArtifactWritten,
        ContextSet,
        GateWaiting,
        ReviewCompleted,
        RoundRecorded,
        RunRewound,
        StepStarted,
    )

Record = dict[str, Any]

# primary keys within a run (every table's key starts with run_id)
PRIMARY_KEYS = {
    "visits": ("step_id", "visit"),
    "context": ("key",),
    "artifacts": ("step_id", "visit", "name"),
    "gates": ("step_id", "visit"),
    "rounds": ("round",),
    "reviews": ("step_id", "visit", "contract"),
}


def visit_of(at: str) -> tuple[str, int] | None:
    """STEP#VISIT (as `run.rewound` names abandoned visits) as (step, visit); None
    when it is not that."""
    step, _, visit = at.rpartition("#")
    return (step, int(visit)) if step and visit.isascii() and visit.isdigit() else None


def _json(value: Any) -> str:
    """An event field as JSON text; pydantic models in it become their fields."""
    return json.dumps(value, default=lambda model: model.model_dump(mode="json"))


def visit_row(e: StepStarted) -> Record:
    return {
        "run_id": e.run_id,
        "step_id": e.step_id,
        "visit": e.visit,
        "kind": e.kind,
        "status": "running",
        "outcome": None,
        "exit_code": None,
        "error": None,
        "error_key": None,
        "output_tail": None,
        "persona": e.persona,
        "adapter": e.adapter,
        "model": e.model,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "started_at": e.ts,
        "finished_at": None,
        "duration_ms": None,
    }


def context_row(e: ContextSet) -> Record:
    return {
        "run_id": e.run_id,
        "key": e.key,
        "value": e.value,
        "step_id": e.step_id,
        "visit": e.visit,
        "updated_at": e.ts,
    }


def rewound_context(e: RunRewound) -> list[Record]:
    """The context rows a rewind leaves: the run's values at the point it went back to
    (which visit set each is not carried: nothing reads it)."""
    return [
        {
            "run_id": e.run_id,
            "key": k,
            "value": v,
            "step_id": None,
            "visit": None,
            "updated_at": e.ts,
        }
        for k, v in sorted((e.context or {}).items())
    ]


def artifact_row(e: ArtifactWritten) -> Record:
    return {
        "run_id": e.run_id,
        "step_id": e.step_id or "",
        "visit": e.visit or 0,
        "name": e.name,
        "path": e.path,
        "sha256": e.sha256,
        "size": e.size,
        "type": e.artifact_type,
        "created_at": e.ts,
    }


def gate_row(e: GateWaiting) -> Record:
    return {
        "run_id": e.run_id,
        "step_id": e.step_id,
        "visit": e.visit,
        "gate_type": e.gate_type,
        "status": "waiting",
        "message": e.message,
        "choices": _json(e.choices),
        "deadline": e.deadline,
        "decision": None,
        "choice": None,
        "reason": None,
        "decided_by": None,
        "created_at": e.ts,
        "decided_at": None,
    }


def round_row(e: RoundRecorded) -> Record:
    return {
        "run_id": e.run_id,
        "round": e.round,
        "thread": e.thread,
        "thread_round": e.thread_round,
        "step_id": e.step_id,
        "visit": e.visit,
        "role": e.role,
        "persona": e.persona,
        "ts": e.ts,
        "metadata": json.dumps(e.metadata, default=str),
        "content": e.content,
    }


def review_row(e: ReviewCompleted) -> Record:
    return {
        "run_id": e.run_id,
        "step_id": e.step_id,
        "visit": e.visit,
        "contract": e.index,
        "for_step": e.for_step,
        "reviewer": e.reviewer,
        "adapter": e.adapter,
        "model": e.model,
        "verdict": e.verdict,
        "issues": _json(e.issues),
        "suggestions": _json(e.suggestions),
        "confidence": e.confidence,
        "summary": e.summary,
        "error": e.error,
        "tokens_in": e.tokens_in,
        "tokens_out": e.tokens_out,
        "cost_usd": e.cost_usd,
        "duration_ms": e.duration_ms,
        "ts": e.ts,
    }
