"""What each page shows, read from the store and returned as the API's models.

Pages and the JSON API call the same functions, so the API has every page's data.
Reads go through the store's reader protocols, and through `store.pages` for the
paged lists (a page of a 10,000-visit run reads one page of visits)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swell.events.statuses import ENDED_FOR_GOOD
from swell.store.capabilities import output_store
from swell.store.pages import PageReader, RunFilter, RunTotals, VisitPage
from swell.store.protocols import Store
from swell.store.rows import ArtifactRow, GateRow, ReviewRow, RunRow, StepRow, VisitRow
from swell.threads.retrieval import retrieve
from swell.web import models as m
from swell.web.text import clean, path_part
from swell.web.timefmt import since_ms
from swell.web.trace import collapse_text, turns

FINAL = ENDED_FOR_GOOD
PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_PAGE = 1_000_000  # a page number past every run (a bound, not a limit in practice)
PROMPT_TEXT = 100_000  # characters of a visit's prompt its page shows
ARTIFACTS_SHOWN = 200  # a run's or a visit's page lists this many (and says how many there are)


@dataclass
class Reader:
    """The store and its paged reads, as the app holds them."""

    store: Store
    pages: PageReader


def _pages(total: int, per_page: int) -> int:
    return max(1, -(-total // per_page))


def _duration(run: RunRow) -> int | None:
    """How long the run took, or has taken so far: a run still going (running, or
    waiting at a gate) counts to now, not to its last event."""
    if run.status in FINAL or run.finished_at:
        return since_ms(run.started_at, run.finished_at or run.updated_at or run.started_at)
    return since_ms(run.started_at, None)


def run_summary(run: RunRow, totals: RunTotals) -> m.RunSummary:
    return m.RunSummary(
        id=run.id,
        pipeline=run.pipeline,
        status=run.status,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        duration_ms=_duration(run),
        visits=run.visits,
        tokens_in=totals.tokens_in,
        tokens_out=totals.tokens_out,
        cost_usd=totals.cost_usd,
        parent_run_id=run.parent_run_id,
        parent_step_id=run.parent_step_id,
        children=totals.children,
        error=clean(run.error, max_text=5_000) or None,
        input=clean(run.input, max_text=5_000),
    )


def runs_page(reader: Reader, filt: RunFilter, page: int, per_page: int) -> m.RunsPage:
    per_page = min(max(per_page, 1), MAX_PER_PAGE)
    page = max(page, 1)
    found = reader.pages.runs_page(filt, (page - 1) * per_page, per_page)
    return m.RunsPage(
        runs=[run_summary(r, found.totals.get(r.id, RunTotals())) for r in found.runs],
        total=found.total,
        page=page,
        per_page=per_page,
        pages=_pages(found.total, per_page),
        pipelines=reader.pages.pipeline_names(),
        filters={
            "pipeline": filt.pipeline,
            "status": filt.status,
            "since": filt.since,
            "until": filt.until.removesuffix("T99") if filt.until else None,
            "roots": None if filt.include_children else "1",
            "q": filt.text,
            "waiting": "1" if filt.waiting else None,
        },
    )


def visit_model(v: VisitRow) -> m.Visit:
    return m.Visit(
        step_id=v.step_id,
        visit=v.visit,
        kind=v.kind,
        status=v.status,
        outcome=v.outcome,
        exit_code=v.exit_code,
        error=clean(v.error, max_text=5_000) or None,
        started_at=v.started_at,
        finished_at=v.finished_at,
        duration_ms=_visit_ms(v),
        tokens_in=v.tokens_in,
        tokens_out=v.tokens_out,
        cost_usd=v.cost_usd,
    )


def _visit_ms(v: VisitRow) -> int | None:
    """A visit's duration; one still going (an agent at work, a gate waiting) counts to now."""
    if v.duration_ms is not None or v.finished_at:
        return v.duration_ms if v.duration_ms is not None else since_ms(v.started_at, v.finished_at)
    return since_ms(v.started_at, None) if v.status in ("running", "waiting") else None


def gate_model(g: GateRow) -> m.Gate:
    return m.Gate(
        step_id=g.step_id,
        visit=g.visit,
        gate_type=g.gate_type,
        status=g.status,
        message=clean(g.message, max_text=10_000) or None,
        choices=g.choices,
        deadline=g.deadline,
        decision=g.decision,
        choice=g.choice,
        reason=clean(g.reason, max_text=10_000) or None,
        decided_by=g.decided_by,
    )


def artifact_model(run_id: str, a: ArtifactRow) -> m.Artifact:
    url = (
        f"/api/runs/{path_part(run_id)}/artifacts/{path_part(a.step_id or '_')}/{a.visit}/"
        f"{path_part(a.name)}"
    )
    return m.Artifact(
        step_id=a.step_id,
        visit=a.visit,
        name=a.name,
        path=a.path,
        sha256=a.sha256,
        size=a.size,
        type=a.type,
        url=url,
    )


def review_model(r: ReviewRow) -> m.Review:
    issues = [
        {k: clean(v, max_text=5_000) if isinstance(v, str) else v for k, v in issue.items()}
        for issue in r.issues
    ]
    return m.Review(
        step_id=r.step_id,
        visit=r.visit,
        contract=r.contract,
        for_step=r.for_step,
        reviewer=r.reviewer,
        verdict=r.verdict,
        issues=issues,
        suggestions=[clean(s, max_text=5_000) for s in r.suggestions],
        confidence=r.confidence,
        summary=clean(r.summary, max_text=10_000) or None,
        error=clean(r.error, max_text=5_000) or None,
    )


def run_totals(reader: Reader, run: RunRow) -> RunTotals:
    return reader.pages.totals([run.id]).get(run.id, RunTotals())


def _with_totals(reader: Reader, runs: list[RunRow]) -> list[tuple[RunRow, RunTotals]]:
    totals = reader.pages.totals([r.id for r in runs])
    return [(r, totals.get(r.id, RunTotals())) for r in runs]


def run_detail(reader: Reader, run_id: str, page: int, per_page: int) -> m.RunDetail:
    return run_detail_and_recent(reader, run_id, page, per_page, 0)[0]


def run_detail_and_recent(
    reader: Reader,
    run_id: str,
    page: int,
    per_page: int,
    recent: int,
    run: RunRow | None = None,
    steps: list[StepRow] | None = None,
    totals: RunTotals | None = None,
) -> tuple[m.RunDetail, VisitPage]:
    """The run's detail and its newest `recent` visits (for the timeline), read in
    one query when the page is the first; `run`, `steps` and `totals` when the caller
    has them (web/views.py keeps them until the run has a new event)."""
    store = reader.store
    run = run or store.get_run(run_id)
    per_page = min(max(per_page, 1), MAX_PER_PAGE)
    page = max(page, 1)
    first = page == 1 and recent > per_page
    read = reader.pages.visits_page(run.id, (page - 1) * per_page, recent if first else per_page)
    visits = VisitPage(read.visits[:per_page], read.total)
    newest = read if first or not recent else reader.pages.visits_page(run.id, 0, recent)
    steps = store.steps(run.id) if steps is None else steps
    gates = [gate_model(g) for g in store.gates(run.id)]
    children = store.children(run.id)
    artifacts = reader.pages.artifacts_page(run.id, ARTIFACTS_SHOWN)
    summary = run_summary(run, run_totals(reader, run) if totals is None else totals)
    # the stored count is of finished visits; the page counts those going on too
    summary.visits = max(summary.visits, visits.total)
    return m.RunDetail(
        run=summary,
        workspace=run.workspace,
        owner_alive=store.owner(run.id) is not None,
        steps=[step_summary(s) for s in steps],
        running=[s.step_id for s in steps if s.last_status == "running"],
        visits=[visit_model(v) for v in visits.visits],
        visits_total=visits.total,
        page=page,
        per_page=per_page,
        pages=_pages(visits.total, per_page),
        gates=gates,
        waiting_gates=[g for g in gates if g.status == "waiting" and g.decision is None],
        children=[run_summary(c, t) for c, t in _with_totals(reader, children)],
        context={k: clean(v, max_text=2_000) for k, v in store.context(run.id).items()},
        artifacts=[artifact_model(run.id, a) for a in artifacts.artifacts],
        artifacts_total=artifacts.total,
        last_seq=run.last_seq,
        final=run.status in FINAL,
        lineage=lineage(store, run.id),
    ), newest


def lineage(store: Store, run_id: str) -> m.Lineage:
    """Where the run was forked from and the forks made of it (ops/lineage.py)."""
    from swell.ops.lineage import links

    found = links(store, run_id)
    origin = found.forked_from
    return m.Lineage(
        forked_from=None
        if origin is None
        else m.ForkLink(run_id=origin.run, step_id=origin.step, visit=origin.visit),
        forks=[m.ForkLink(run_id=f.run, step_id=f.step, visit=f.visit) for f in found.forks],
    )


def step_summary(s: StepRow) -> m.StepSummary:
    return m.StepSummary(
        step_id=s.step_id,
        visits=s.visits,
        last_visit=s.last_visit,
        last_status=s.last_status,
        last_exit_code=s.last_exit_code,
    )


def _contract(event: dict[str, Any]) -> m.ContractResult:
    passed = event["type"] == "contract.passed"
    detail = event.get("note") if passed else event.get("error")
    if not passed and event.get("policy"):
        detail = f"{detail} (on_failure: {event['policy']})"
    return m.ContractResult(
        index=event.get("index"),
        contract_type=event.get("contract_type"),
        passed=passed,
        detail=clean(detail, max_text=10_000),
    )


def _inert(event: dict[str, Any]) -> dict[str, Any]:
    return {k: clean(v, max_text=10_000) if isinstance(v, str) else v for k, v in event.items()}


def visit_detail(reader: Reader, run_id: str, step_id: str, visit: int) -> m.VisitDetail | None:
    store = reader.store
    run = store.get_run(run_id)
    row = reader.pages.visit(run.id, step_id, visit)
    if row is None:
        return None
    found = reader.pages.visit_detail(run.id, step_id, visit)
    prompts = [e for e in found.events if e["type"] == "prompt.rendered"]
    events = [e for e in found.events if e["type"] != "prompt.rendered"]
    prompt = prompts[-1] if prompts else {}
    running = row.status == "running"
    chunks = output_store(store).output(run.id, step_id=step_id, visit=visit) if running else []
    artifacts = reader.pages.artifacts_page(run.id, ARTIFACTS_SHOWN, (step_id, visit))
    return m.VisitDetail(
        run_id=run.id,
        visit=visit_model(row),
        output_tail=clean(found.output_tail),
        live_output=clean("".join(c.text for c in chunks)),
        live_after=chunks[-1].id if chunks else 0,
        prompt=clean(prompt.get("prompt"), max_text=PROMPT_TEXT) if prompt else None,
        system_prompt=clean(prompt.get("system_prompt"), max_text=PROMPT_TEXT) or None,
        contracts=[_contract(e) for e in events if e["type"].startswith("contract.")],
        reviews=[review_model(r) for r in reader.pages.reviews_of(run.id, (step_id, visit))],
        retries=[_inert(e) for e in events if e["type"] in ("retry.requested", "rework.requested")],
        artifacts=[artifact_model(run.id, a) for a in artifacts.artifacts],
        artifacts_total=artifacts.total,
        events=collapse_text([_inert(e) for e in events]),
        trace=turns([_inert(e) for e in events]),
    )


def thread_page(
    reader: Reader, run_id: str, thread: str | None, before: int | None, budget: int
) -> m.ThreadPage:
    """The same page `swell thread` prints (threads.retrieval)."""
    run = reader.store.get_run(run_id)
    page = retrieve(reader.store, run.id, thread, budget, before)
    return m.ThreadPage(
        run_id=run.id,
        thread=thread,
        total=page.total,
        rounds=[
            m.Round(
                id=r.id,
                role=r.role or "unknown",
                ts=r.ts,
                metadata=r.metadata,
                content=clean(r.content),
            )
            for r in page.head + page.tail
        ],
        head=len(page.head),
        omitted=page.omitted,
        load_before=page.load_before,
    )


def pipelines_state(root: Path) -> m.Pipelines:
    """`swell validate` for every pipeline of the project: which load and lint clean."""
    from swell.manifest.validation import validate_project
    from swell.registries import open_registries  # the registries lint asks about step kinds

    result = validate_project(root, open_registries().lint_context(), None)
    errors = [p for p in result.problems if p.severity == "error"]

    def of(name: str) -> list[str]:
        return [str(p) for p in result.problems if Path(p.file).stem == name]

    named = {name for name in result.checked}
    return m.Pipelines(
        ok=not errors,
        manifest_problems=[str(p) for p in result.problems if Path(p.file).stem not in named],
        pipelines=[
            m.PipelineState(name=name, ok=name not in result.failed, problems=of(name))
            for name in sorted(result.checked)
        ],
    )
