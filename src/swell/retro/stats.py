"""Numbers over many runs (`swell retro stats`, the dashboard's Analytics page), from
what the store adds up (`capabilities.stats_source`) and the friction of each run,
classified from its few friction events by the same rules as one run's retro."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime, timedelta

from swell.errors import SwellError
from swell.events import models as ev
from swell.retro.friction import classify, counts, ms_between, smoothness
from swell.retro.models import FRICTION_KINDS, Distribution, RunPoint, Stats, StepStats
from swell.store.capabilities import stats_source
from swell.store.pages import RunFilter
from swell.store.protocols import Store
from swell.store.stats import RunFacts, StatsSource, rank

POINTS = 500  # runs a chart plots at most (the newest)
_SINCE = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def since_time(text: str | None, now: datetime | None = None) -> str | None:
    """`--since`: a period back from now (`7d`, `12h`, `30m`, `2w`, `1d12h`) or a date
    or time (ISO 8601), as the store's time text; SwellError if it is neither."""
    if not text or not text.strip():
        return None
    value = text.strip()
    parts = _SINCE.findall(value)
    if parts and "".join(n + u for n, u in parts) == value.replace(" ", ""):
        try:
            delta = timedelta(**{_UNITS[u]: 0 for u in _UNITS})
            for number, unit in parts:
                delta += timedelta(**{_UNITS[unit]: int(number)})
            return _stamp((now or datetime.now(UTC)) - delta)
        except (OverflowError, ValueError):  # past what a date can hold
            raise SwellError(
                f"--since {value!r} reaches back before the year 1: give a shorter period "
                "(7d, 12h, 30m, 2w) or a date (2026-11-01)"
            ) from None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise SwellError(
            f"--since {value!r}: give a period back from now (7d, 12h, 30m, 2w) or a "
            "date (2026-11-01)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _stamp(moment)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def compute_stats(store: Store, pipeline: str | None = None, since: str | None = None) -> Stats:
    """Stats over the runs of `pipeline` (every pipeline: None) created since `since`
    (a `since_time` answer)."""
    source = stats_source(store, RunFilter(pipeline=pipeline, since=since))
    return stats_of(source, pipeline, since)


def _run_duration(run: RunFacts) -> int | None:
    if not run.started_at or not run.finished_at:
        return None
    return ms_between(run.started_at, run.finished_at)


def stats_of(source: StatsSource, pipeline: str | None, since: str | None) -> Stats:
    friction: Counter[str] = Counter(dict.fromkeys(FRICTION_KINDS, 0))
    runs_with: Counter[str] = Counter(dict.fromkeys(FRICTION_KINDS, 0))
    ratings: Counter[str] = Counter()
    points: list[RunPoint] = []
    scores: list[int] = []
    durations: list[int] = []
    retry_events = 0
    for run in source.runs:
        events = source.events.get(run.id, [])
        found = classify(events)
        per_kind = counts(found)
        retries = sum(isinstance(e, ev.RetryRequested) for e in events)
        retry_events += retries
        revisits = max(0, run.visits - run.steps - retries)
        score, rating = smoothness(found, revisits, run.status)
        friction.update(per_kind)
        runs_with.update(k for k, n in per_kind.items() if n)
        ratings[rating] += 1
        scores.append(score)
        duration = _run_duration(run)
        if duration is not None:
            durations.append(duration)
        if len(points) < POINTS:
            points.append(
                RunPoint(
                    id=run.id,
                    created_at=run.created_at,
                    status=run.status,
                    tokens=run.tokens_in + run.tokens_out,
                    cost_usd=run.cost_usd,
                    duration_ms=duration,
                    smoothness=score,
                )
            )
    n = len(source.runs)
    review_count = sum(r.reviews for r in source.reviews)
    review_tokens = sum(r.tokens_in + r.tokens_out for r in source.reviews)
    tokens = sum(r.tokens_in + r.tokens_out for r in source.runs) + review_tokens
    cost = sum(r.cost_usd for r in source.runs) + sum(r.cost_usd for r in source.reviews)
    statuses = Counter(r.status for r in source.runs)
    # a cancelled run is a person's choice, not a failure: out of the rate (docs/retro.md)
    ended = statuses["succeeded"] + statuses["failed"]
    return Stats(
        pipeline=pipeline,
        since=since,
        runs=n,
        statuses=dict(statuses),
        success_rate=_ratio(statuses["succeeded"], ended),
        duration=Distribution(median_ms=rank(durations, 0.5), p95_ms=rank(durations, 0.95)),
        tokens=tokens,
        tokens_per_run=round(tokens / n, 1) if n else 0.0,
        cost_usd=round(cost, 6),
        cost_per_run=round(cost / n, 6) if n else 0.0,
        reviews=review_count,
        review_pass_rate=_ratio(sum(r.passed for r in source.reviews), review_count),
        review_tokens_avg=round(review_tokens / review_count, 1) if review_count else None,
        review_cost_avg=_ratio(sum(r.cost_usd for r in source.reviews), review_count),
        rework_after_review_rate=_ratio(friction["review_rework"], review_count),
        friction=dict(friction),
        runs_with=dict(runs_with),
        retries=retry_events,
        breaker_trips=friction["breaker_trip"],
        limit_hits=friction["limit_hit"],
        smoothness_avg=round(sum(scores) / n, 1) if n else None,
        ratings=dict(ratings),
        steps=_steps(source, n),
        points=points,
    )


def _steps(source: StatsSource, runs: int) -> list[StepStats]:
    reviews = {(r.pipeline, r.step_id): r for r in source.reviews}
    out = []
    for s in source.steps:
        review = reviews.get((s.pipeline, s.step_id))
        tokens = s.tokens_in + s.tokens_out
        out.append(
            StepStats(
                pipeline=s.pipeline,
                step_id=s.step_id,
                visits=s.visits,
                failed=s.failed,
                runs=s.runs,
                visits_per_run=round(s.visits / s.runs, 2) if s.runs else 0.0,
                max_visits=s.max_visits,
                tokens=tokens,
                tokens_per_visit=round(tokens / s.visits, 1) if s.visits else 0.0,
                cost_usd=round(s.cost_usd, 6),
                cost_per_run=round(s.cost_usd / s.runs, 6) if s.runs else 0.0,
                median_ms=s.median_ms,
                p95_ms=s.p95_ms,
                reviews=review.reviews if review else 0,
                review_pass_rate=_ratio(review.passed, review.reviews) if review else None,
            )
        )
    return out
