"""The JSON API's response and request bodies (pydantic: they make the OpenAPI schema).

Every page is rendered from one of these, so what a page shows the API returns too.
Text that agents produced is already cleaned (`text.clean`) here."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class RunSummary(BaseModel):
    id: str
    pipeline: str
    status: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    visits: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    parent_run_id: str | None
    parent_step_id: str | None
    children: int
    error: str | None
    input: str


class RunsPage(BaseModel):
    runs: list[RunSummary]
    total: int
    page: int
    per_page: int
    pages: int
    pipelines: list[str]  # every pipeline some run used, for the filter
    filters: dict[str, str | None]


class StepSummary(BaseModel):
    step_id: str
    visits: int
    last_visit: int
    last_status: str
    last_exit_code: int | None


class Visit(BaseModel):
    step_id: str
    visit: int
    kind: str | None
    status: str
    outcome: str | None
    exit_code: int | None
    error: str | None
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    tokens_in: int
    tokens_out: int
    cost_usd: float


class Gate(BaseModel):
    step_id: str
    visit: int
    gate_type: str
    status: str
    message: str | None
    choices: list[dict[str, Any]]
    deadline: str | None
    decision: str | None
    choice: str | None
    reason: str | None
    decided_by: str | None


class Artifact(BaseModel):
    step_id: str
    visit: int
    name: str
    path: str
    sha256: str
    size: int
    type: str | None
    url: str


class Review(BaseModel):
    step_id: str
    visit: int
    contract: int
    for_step: str | None
    reviewer: str
    verdict: str | None
    issues: list[dict[str, Any]]
    suggestions: list[str]
    confidence: float | None
    summary: str | None
    error: str | None


class ForkLink(BaseModel):
    """One end of a fork (docs/time-travel.md): the other run and the visit forked at."""

    run_id: str
    step_id: str
    visit: int


class Lineage(BaseModel):
    forked_from: ForkLink | None = None  # the origin, when this run is a fork
    forks: list[ForkLink] = []  # the forks made of this run, oldest first


class RunDetail(BaseModel):
    run: RunSummary
    workspace: str | None
    owner_alive: bool
    steps: list[StepSummary]
    running: list[str]  # steps with a visit going on now
    visits: list[Visit]  # one page, newest first
    visits_total: int
    page: int
    per_page: int
    pages: int
    gates: list[Gate]
    waiting_gates: list[Gate]
    children: list[RunSummary]
    context: dict[str, str]
    artifacts: list[Artifact]
    artifacts_total: int
    last_seq: int
    final: bool
    lineage: Lineage = Lineage()


class ContractResult(BaseModel):
    index: int | None
    contract_type: str | None
    passed: bool
    detail: str


class VisitDetail(BaseModel):
    run_id: str
    visit: Visit
    output_tail: str
    live_output: str  # what a running visit has printed so far (its stored chunks)
    live_after: int  # the last of those chunks: where the page's output stream starts
    prompt: str | None  # an agent visit's prompt as sent (prompt.rendered)
    system_prompt: str | None
    contracts: list[ContractResult]
    reviews: list[Review]
    retries: list[dict[str, Any]]  # retry.requested and rework.requested events
    artifacts: list[Artifact]  # the first 200
    artifacts_total: int
    events: list[dict[str, Any]]
    trace: list[dict[str, Any]] = Field(default_factory=list)  # turns and what came between


class Round(BaseModel):
    id: int
    role: str
    ts: str
    metadata: dict[str, Any]
    content: str


class ThreadPage(BaseModel):
    run_id: str
    thread: str | None
    total: int
    rounds: list[Round]
    head: int  # how many of `rounds` come before the omitted ones
    omitted: int
    load_before: int | None  # pass as `before` to load the omitted rounds


class PipelineState(BaseModel):
    name: str
    ok: bool
    problems: list[str]


class Pipelines(BaseModel):
    ok: bool
    manifest_problems: list[str]
    pipelines: list[PipelineState]


class GateDecision(BaseModel):
    choice: str | None = None
    reason: str | None = Field(default=None, max_length=10_000)


class ActionResult(BaseModel):
    ok: bool
    message: str


class CsrfToken(BaseModel):
    token: str


class Problem(BaseModel):
    """The body of every error the API answers (400, 403, 404, 409, 503)."""

    detail: str  # one message; a bad parameter's names it, e.g. "query parameter 'limit': ..."
