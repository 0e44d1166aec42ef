"""What a retrospective and the stats over runs are, as `-o json` and the dashboard's
API give them (pydantic: one schema for both, in the OpenAPI description)."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, Field

FrictionKind = Literal[
    "retry", "contract_failure", "review_rework", "breaker_trip", "limit_hit", "gate_wait", "relay"
]
FRICTION_KINDS: tuple[FrictionKind, ...] = get_args(FrictionKind)
Rating = Literal["effortless", "smooth", "bumpy", "struggled", "failed", "cancelled"]


class Friction(BaseModel):
    """One friction point, classified from one event (retro/friction.py says how)."""

    kind: FrictionKind
    step_id: str | None = None
    visit: int | None = None
    seq: int  # the event it was classified from
    detail: str
    penalty: int  # what it takes off the smoothness score
    wait_ms: int | None = None  # gate_wait: how long the gate waited
    feedback: list[str] = Field(default_factory=list)  # review_rework: issues, suggestions


class VisitChange(BaseModel):
    """One visit of a loop: what led to it and what it did."""

    step_id: str
    visit: int
    reason: str  # how it was queued: entry, edge, dependency, choice, retry, rework, resume
    source: str | None = None  # the visit that queued it, `STEP#N`
    driven_by: str | None = None  # the error or feedback that made this visit happen
    feedback: list[str] = Field(default_factory=list)  # a review's issues and suggestions
    files: list[str] = Field(default_factory=list)  # files the agent wrote or edited
    artifacts_changed: list[str] = Field(default_factory=list)  # content differs from before
    outcome: str | None = None
    error: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    duration_ms: int | None = None


class Loop(BaseModel):
    """Work done more than once: a step's repeated visits, and the visits reworking it."""

    step_id: str
    visits: int
    changes: list[VisitChange]


class StepRetro(BaseModel):
    step_id: str
    visits: int
    failed: int  # failed visits; a conditional step's are the failures it routes on
    tokens_in: int
    tokens_out: int
    cost_usd: float
    duration_ms: int
    review_tokens: int = 0
    review_cost_usd: float = 0.0


class Totals(BaseModel):
    tokens_in: int = 0  # the steps' own agents
    tokens_out: int = 0
    cost_usd: float = 0.0
    review_tokens_in: int = 0  # agent reviewers, counted apart from the steps
    review_tokens_out: int = 0
    review_cost_usd: float = 0.0
    tokens: int = 0  # everything
    total_cost_usd: float = 0.0


class Retro(BaseModel):
    """The retrospective of one run."""

    run_id: str
    pipeline: str
    status: str
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    duration_ms: int | None = None
    visits: int
    smoothness: int  # 0..100 (docs/retro.md has the formula)
    rating: Rating
    counts: dict[str, int]  # friction points by kind (every kind, 0 included)
    friction: list[Friction]
    totals: Totals
    steps: list[StepRetro]
    loops: list[Loop]
    gate_wait_ms: int = 0
    reviews: int = 0
    reviews_passed: int = 0
    narrative: str | None = None  # `--narrate`: an agent's summary; no number depends on it
    narrator: str | None = None  # the persona that wrote it


class Distribution(BaseModel):
    median_ms: int | None = None
    p95_ms: int | None = None


class StepStats(BaseModel):
    pipeline: str
    step_id: str
    visits: int
    failed: int = 0  # failed visits; a conditional step's are the failures it routes on
    runs: int
    visits_per_run: float  # a loop's visits, on average, in the runs that reached it
    max_visits: int  # the most in one run
    tokens: int
    tokens_per_visit: float
    cost_usd: float
    cost_per_run: float
    median_ms: int | None = None
    p95_ms: int | None = None
    reviews: int = 0
    review_pass_rate: float | None = None


class RunPoint(BaseModel):
    """One run, for the charts."""

    id: str
    created_at: str
    status: str
    tokens: int
    cost_usd: float
    duration_ms: int | None = None
    smoothness: int


class Stats(BaseModel):
    """Numbers over the runs of a pipeline (or all) in a period."""

    pipeline: str | None = None
    since: str | None = None
    until: str | None = None
    runs: int
    statuses: dict[str, int]
    success_rate: float | None = None
    duration: Distribution
    tokens: int
    tokens_per_run: float
    cost_usd: float
    cost_per_run: float
    reviews: int
    review_pass_rate: float | None = None
    review_tokens_avg: float | None = None
    review_cost_avg: float | None = None
    rework_after_review_rate: float | None = None  # review reworks per review
    friction: dict[str, int]  # friction points by kind, over every run
    runs_with: dict[str, int]  # runs with at least one point of each kind
    retries: int
    breaker_trips: int
    limit_hits: int
    smoothness_avg: float | None = None
    ratings: dict[str, int]
    steps: list[StepStats]
    points: list[RunPoint]  # the newest runs first, at most POINTS of them
