"""Which of a run's events `swell logs` shows: one step's, errors only, since a time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `swell logs` filters views of stored events too, without pydantic
    from swell.events.models import BaseEvent
    from swell.events.views import EventView


@dataclass(frozen=True)
class LogFilter:
    step: str | None = None
    errors: bool = False
    since: datetime | None = None


def since_time(value: str | None, now: datetime | None = None) -> datetime | None:
    """`--since`: a duration back from now (10m, 2h, 1d) or an ISO time; ValueError if neither."""
    from swell.manifest.durations import DurationTooLong, parse_duration

    if value is None:
        return None
    try:
        return (now or datetime.now(UTC)) - timedelta(seconds=parse_duration(value))
    except DurationTooLong as exc:
        raise ValueError(f"invalid --since {value!r}: {exc}") from None
    except (ValueError, OverflowError):  # not a duration, or one before the year 1
        pass
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"invalid --since {value!r}: use a duration (10m, 2h, 1d) or a time "
            "(2025-01-31T12:00:00Z)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def is_error(event: BaseEvent | EventView) -> bool:
    """What `--errors` keeps: failed visits, contract failures, limits and the breaker,
    interrupted visits, rejected gates, and a run that did not succeed."""
    kind = getattr(event, "type", "")
    if kind == "step.finished":
        return getattr(event, "outcome", "") == "failure"
    if kind == "run.finished":
        return getattr(event, "status", "") != "succeeded"
    if kind == "gate.resolved":
        return getattr(event, "decision", "") != "approved"
    return kind in (
        "contract.failed",
        "limit.exceeded",
        "breaker.tripped",
        "step.interrupted",
        "budget.exceeded",
    )


def keep(event: BaseEvent | EventView, f: LogFilter) -> bool:
    if f.step and event.step_id != f.step:
        return False
    if f.errors and not is_error(event):
        return False
    if f.since is not None:
        try:
            when = datetime.fromisoformat(event.ts.replace("Z", "+00:00"))
        except ValueError:
            return True
        return when >= f.since
    return True


def keep_chunk(ts: str, f: LogFilter) -> bool:
    """Whether a visit's stored output chunk (stamped `ts`) is shown: never with
    `--errors` (a failure's output is in its error), else when it is recent enough.
    The step filter is the store's (`output(step_id=...)`)."""
    if f.errors:
        return False
    if f.since is not None:
        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")) >= f.since
        except ValueError:
            return True
    return True


__all__ = ["LogFilter", "is_error", "keep", "keep_chunk", "since_time"]
