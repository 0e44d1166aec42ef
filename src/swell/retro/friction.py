"""Friction points, classified deterministically from a run's events, and the
smoothness score they add up to. No model is asked: the same events give the same
points on every machine.

One point per cause, from the event that records it:

- `review_rework`: an agent review's verdict sent the work back: a `rework.requested`
  naming a reviewer, or a `retry.requested` of a visit whose failed contract was an
  agent review (it carries a verdict).
- `retry`: any other `retry.requested` (a mechanical contract or the step failed).
- `contract_failure`: a `contract.failed` that no point above accounts for (the run
  failed on it, went on past it, or a mechanical contract sent the step to rework).
- `breaker_trip`, `limit_hit`, `relay`: each `breaker.tripped`, `limit.exceeded`,
  `relay.triggered`.
- `gate_wait`: each `gate.waiting`, with how long it waited until its `gate.resolved`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from swell.events import models as ev
from swell.retro.models import FRICTION_KINDS, Friction, FrictionKind, Rating

# what one point of each kind takes off 100; a gate's wait is a person deciding, by
# design: it costs time (reported) but no smoothness
PENALTY: dict[FrictionKind, int] = {
    "retry": 5,
    "contract_failure": 10,
    "review_rework": 10,
    "breaker_trip": 25,
    "limit_hit": 25,
    "relay": 5,
    "gate_wait": 0,
}
REVISIT_PENALTY = 2  # each visit of a step after its first, through the graph (a loop)
RATINGS: tuple[tuple[int, Rating], ...] = ((90, "effortless"), (75, "smooth"), (50, "bumpy"))
FEEDBACK_ITEMS = 20  # of a review's issues and suggestions kept in a point


def ms_between(start: str, end: str) -> int | None:
    """Milliseconds from one event time to another (None when either is unreadable)."""
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0, int((b - a).total_seconds() * 1000))


def first_line(text: str | None, limit: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def feedback_lines(feedback: ev.ReviewFeedback | None) -> list[str]:
    """A review's issues (severity, place, detail) and suggestions, one line each."""
    if feedback is None:
        return []
    lines = []
    for issue in feedback.issues:
        where = f" {issue.file}" + (f":{issue.line}" if issue.line else "") if issue.file else ""
        lines.append(f"[{issue.severity}]{where} {issue.detail}")
    lines += [f"suggestion: {s}" for s in feedback.suggestions]
    return lines[:FEEDBACK_ITEMS]


@dataclass
class _Scan:
    points: list[Friction] = field(default_factory=list)
    # contract failures by the visit that had them, and the visits accounted for
    failed: dict[tuple[str | None, int | None], list[ev.ContractFailed]] = field(
        default_factory=dict
    )
    handled: set[int] = field(default_factory=set)  # seqs of contract.failed accounted for
    waiting: dict[tuple[str | None, int | None], Friction] = field(default_factory=dict)
    waiting_ts: dict[tuple[str | None, int | None], str] = field(default_factory=dict)


def _point(kind: FrictionKind, e: ev.BaseEvent, detail: str, **extra: object) -> Friction:
    return Friction(
        kind=kind,
        step_id=e.step_id,
        visit=e.visit,
        seq=e.seq,
        detail=detail,
        penalty=PENALTY[kind],
        **extra,
    )


def _on_retry(scan: _Scan, e: ev.RetryRequested) -> None:
    failures = scan.failed.get((e.step_id, e.visit), [])
    review = next((f for f in failures if f.verdict is not None), None)
    for f in failures:
        scan.handled.add(f.seq)
    detail = f"attempt {e.attempt} of {e.max_attempts}: {first_line(e.reason)}"
    if review is not None:
        scan.points.append(_point("review_rework", e, f"review {review.verdict}, {detail}"))
    else:
        scan.points.append(_point("retry", e, detail))


def _on_rework(scan: _Scan, e: ev.ReworkRequested) -> None:
    # the contract failure that asked for it: the newest one of the reworked step's
    # contracts (checked by that step, or re-checked by a visit reworking it)
    owner = next(
        (
            f
            for key in reversed(list(scan.failed))
            for f in reversed(scan.failed[key])
            if (f.for_step or f.step_id) == e.for_step and f.seq not in scan.handled
        ),
        None,
    )
    if owner is not None:
        scan.handled.add(owner.seq)
    where = f"{e.for_step}#{e.for_visit} → {e.step_id}"
    if e.reviewer:
        detail = f"{where}: {first_line(e.reason)}"
        point = _point("review_rework", e, detail, feedback=feedback_lines(e.feedback))
    else:
        what = e.contract_type or "the step"  # none: the step failed all its attempts
        detail = f"{where}: {what} failed: {first_line(e.reason)}"
        point = _point("contract_failure", e, detail)
    # the point belongs to the visit whose work was sent back
    point.step_id, point.visit = e.for_step, e.for_visit
    scan.points.append(point)


def _on_gate(scan: _Scan, e: ev.BaseEvent) -> None:
    key = (e.step_id, e.visit)
    if isinstance(e, ev.GateWaiting):
        point = _point("gate_wait", e, f"{e.gate_type} gate waiting: {first_line(e.message)}")
        scan.points.append(point)
        scan.waiting[key], scan.waiting_ts[key] = point, e.ts
    elif isinstance(e, ev.GateResolved) and key in scan.waiting:
        point = scan.waiting.pop(key)
        point.wait_ms = ms_between(scan.waiting_ts.pop(key), e.ts)
        said = f" ({e.choice})" if e.choice else ""
        by = f" by {e.by}" if e.by else ""
        point.detail += f" → {e.decision}{said}{by}"


def classify(events: Iterable[ev.BaseEvent]) -> list[Friction]:
    """The run's friction points in the order of the events they come from."""
    scan = _Scan()
    for e in events:
        if isinstance(e, ev.ContractFailed):
            scan.failed.setdefault((e.step_id, e.visit), []).append(e)
        elif isinstance(e, ev.RetryRequested):
            _on_retry(scan, e)
        elif isinstance(e, ev.ReworkRequested):
            _on_rework(scan, e)
        elif isinstance(e, ev.BreakerTripped):
            detail = f"the same error {e.count} times in a row: {first_line(e.error_key)}"
            scan.points.append(_point("breaker_trip", e, detail))
        elif isinstance(e, ev.LimitExceeded):
            detail = f"{e.limit} reached ({e.count} of {e.maximum})"
            scan.points.append(_point("limit_hit", e, detail))
        elif isinstance(e, ev.RelayTriggered):
            detail = f"context at {e.tokens} tokens passed {e.threshold} (window {e.window})"
            scan.points.append(_point("relay", e, detail))
        elif isinstance(e, ev.GateWaiting | ev.GateResolved):
            _on_gate(scan, e)
    for failures in scan.failed.values():
        for f in failures:
            if f.seq not in scan.handled:
                detail = f"contract {f.index + 1} ({f.contract_type}, on_failure {f.policy})"
                scan.points.append(
                    _point("contract_failure", f, f"{detail}: {first_line(f.error)}")
                )
    return sorted(scan.points, key=lambda p: p.seq)


def counts(points: Sequence[Friction]) -> dict[str, int]:
    """Points by kind, every kind present."""
    found: dict[str, int] = dict.fromkeys(FRICTION_KINDS, 0)
    for p in points:
        found[p.kind] += 1
    return found


def smoothness(points: Sequence[Friction], revisits: int, status: str) -> tuple[int, Rating]:
    """100 minus every point's penalty and REVISIT_PENALTY per revisit, at least 0; the
    rating by score (RATINGS, else `struggled`), `failed` for a run that failed or was
    interrupted, `cancelled` for one a person cancelled (a choice, not a failure)."""
    score = max(0, 100 - sum(p.penalty for p in points) - REVISIT_PENALTY * revisits)
    if status == "cancelled":
        return score, "cancelled"
    if status in ("failed", "interrupted"):
        return score, "failed"
    rating: Rating = next((r for bound, r in RATINGS if score >= bound), "struggled")
    return score, rating
