"""A bench's report: per pipeline the resolved rate with its interval, cost, tokens and
time per task and per resolved task, loops and reviews (from each task's run in the
store, via its retro), and a paired comparison of every two pipelines."""

from __future__ import annotations

from itertools import combinations

from pydantic import BaseModel

from swell.bench.records import BenchBook, TaskRecord
from swell.bench.stats import mcnemar_exact, wilson
from swell.errors import SwellError
from swell.store.protocols import Store


class PipelineSummary(BaseModel):
    label: str  # the pipeline, with its bench when compared with another
    pipeline: str
    bench_id: str
    tasks: int
    resolved: int
    not_graded: int  # the run or the checkout failed before a patch could be graded
    resolved_rate: float
    ci_low: float  # Wilson 95%
    ci_high: float
    cost_usd: float
    tokens: int
    wall_seconds: float  # the tasks' runs, added up
    cost_per_task: float
    cost_per_resolved: float | None
    tokens_per_task: float
    tokens_per_resolved: float | None
    seconds_per_task: float
    seconds_per_resolved: float | None
    visits: int
    visits_per_task: float
    reworks: int
    reviews: int
    review_pass_rate: float | None
    breaker_trips: int
    test_seconds_per_task: float  # the graders' test commands
    harness_seconds_per_task: float  # checkout, diff, patch and setup: the harness itself


class Pair(BaseModel):
    a: str
    b: str
    tasks: int  # graded by both
    both: int
    neither: int
    only_a: list[str]
    only_b: list[str]
    p_value: float  # exact McNemar


class TaskVerdict(BaseModel):
    instance_id: str
    # label -> resolved, unresolved, error (not graded), running (not done yet), missing
    verdicts: dict[str, str]
    run_ids: dict[str, str | None]


class BenchReport(BaseModel):
    bench_id: str
    dataset: str
    created: str
    compared_with: str | None = None
    pipelines: list[PipelineSummary]
    pairs: list[Pair]
    tasks: list[TaskVerdict]


class _Facts(BaseModel):
    cost: float = 0.0
    tokens: int = 0
    visits: int = 0
    reworks: int = 0
    reviews: int = 0
    reviews_passed: int = 0
    breaker_trips: int = 0


def _facts(store: Store, run_id: str | None) -> _Facts:
    from swell.retro.run import build_retro

    if run_id is None:
        return _Facts()
    try:
        retro = build_retro(store, run_id)
    except SwellError:
        return _Facts()
    return _Facts(
        cost=retro.totals.total_cost_usd,
        tokens=retro.totals.tokens,
        visits=retro.visits,
        reworks=retro.counts.get("review_rework", 0),
        reviews=retro.reviews,
        reviews_passed=retro.reviews_passed,
        breaker_trips=retro.counts.get("breaker_trip", 0),
    )


def _per(total: float, count: int) -> float | None:
    return total / count if count else None


def _summary(store: Store, label: str, bench_id: str, records: list[TaskRecord]) -> PipelineSummary:
    n = len(records)
    resolved = sum(r.resolved for r in records)
    facts = [_facts(store, r.run_id) for r in records]
    cost = sum(f.cost for f in facts)
    tokens = sum(f.tokens for f in facts)
    wall = sum(r.run_seconds for r in records)
    reviews = sum(f.reviews for f in facts)
    tests = sum(r.grade.test_seconds for r in records if r.grade)
    harness = sum(r.task_seconds - r.run_seconds for r in records) - tests
    low, high = wilson(resolved, n)
    return PipelineSummary(
        label=label,
        pipeline=records[0].pipeline if records else label,
        bench_id=bench_id,
        tasks=n,
        resolved=resolved,
        not_graded=sum(r.grade is None for r in records),
        resolved_rate=resolved / n if n else 0.0,
        ci_low=low,
        ci_high=high,
        cost_usd=cost,
        tokens=tokens,
        wall_seconds=wall,
        cost_per_task=cost / n if n else 0.0,
        cost_per_resolved=_per(cost, resolved),
        tokens_per_task=tokens / n if n else 0.0,
        tokens_per_resolved=_per(tokens, resolved),
        seconds_per_task=wall / n if n else 0.0,
        seconds_per_resolved=_per(wall, resolved),
        visits=sum(f.visits for f in facts),
        visits_per_task=sum(f.visits for f in facts) / n if n else 0.0,
        reworks=sum(f.reworks for f in facts),
        reviews=reviews,
        review_pass_rate=_per(sum(f.reviews_passed for f in facts), reviews),
        breaker_trips=sum(f.breaker_trips for f in facts),
        test_seconds_per_task=tests / n if n else 0.0,
        harness_seconds_per_task=max(0.0, harness) / n if n else 0.0,
    )


def _columns(
    store: Store, bench_id: str, suffix: str
) -> tuple[list[str], dict[str, dict[str, TaskRecord]]]:
    """The bench's tasks, and per pipeline label its records by instance id."""
    book = BenchBook(store, bench_id)
    plan = book.plan()
    found: dict[str, dict[str, TaskRecord]] = {f"{p}{suffix}": {} for p in plan.pipelines}
    for record in book.tasks().values():
        label = f"{record.pipeline}{suffix}"
        if label in found:
            found[label][record.instance_id] = record
    return plan.tasks, found


def build_report(store: Store, bench_id: str, *, other: str | None = None) -> BenchReport:
    """The report of `bench_id`; with `other`, that bench's pipelines beside it (labelled
    `PIPELINE@BENCH`), compared on the tasks both graded."""
    plan = BenchBook(store, bench_id).plan()
    tasks, columns = _columns(store, bench_id, "")
    if other is not None:
        other_tasks, more = _columns(store, other, f"@{other}")
        if other == bench_id:
            more = {}
        columns.update(more)
        tasks += [t for t in other_tasks if t not in tasks]
    done = {
        label: {t: r for t, r in by_task.items() if r.status == "done"}
        for label, by_task in columns.items()
    }
    summaries = [  # over the graded tasks (a bench under way has others)
        _summary(
            store,
            label,
            bench_id if "@" not in label else label.split("@", 1)[1],
            list(by_task.values()),
        )
        for label, by_task in done.items()
    ]
    pairs = [_pair(a, done[a], b, done[b]) for a, b in combinations(done, 2)]
    verdicts = [
        TaskVerdict(
            instance_id=t,
            verdicts={label: _verdict(by_task.get(t)) for label, by_task in columns.items()},
            run_ids={
                label: (r.run_id if (r := by_task.get(t)) else None)
                for label, by_task in columns.items()
            },
        )
        for t in tasks
    ]
    return BenchReport(
        bench_id=bench_id,
        dataset=plan.dataset,
        created=plan.created,
        compared_with=other,
        pipelines=summaries,
        pairs=pairs,
        tasks=verdicts,
    )


def _verdict(record: TaskRecord | None) -> str:
    if record is None:
        return "missing"
    if record.status != "done":
        return "running"
    if record.grade is None:
        return "error"
    return "resolved" if record.grade.resolved else "unresolved"


def _pair(a: str, ra: dict[str, TaskRecord], b: str, rb: dict[str, TaskRecord]) -> Pair:
    shared = [t for t in ra if t in rb]
    only_a = [t for t in shared if ra[t].resolved and not rb[t].resolved]
    only_b = [t for t in shared if rb[t].resolved and not ra[t].resolved]
    both = sum(ra[t].resolved and rb[t].resolved for t in shared)
    return Pair(
        a=a,
        b=b,
        tasks=len(shared),
        both=both,
        neither=len(shared) - both - len(only_a) - len(only_b),
        only_a=only_a,
        only_b=only_b,
        p_value=mcnemar_exact(len(only_a), len(only_b)),
    )


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _num(value: float | None, fmt: str = ".0f") -> str:
    return "-" if value is None else format(value, fmt)


def report_text(report: BenchReport) -> str:
    lines = [f"bench {report.bench_id}  dataset {report.dataset}  ({report.created})"]
    if report.compared_with:
        lines[0] += f"  compared with {report.compared_with}"
    lines.append("")
    for s in report.pipelines:
        lines += [
            f"{s.label}: resolved {s.resolved}/{s.tasks} = {s.resolved_rate:.1%} "
            f"(95% CI {s.ci_low:.1%}-{s.ci_high:.1%})"
            + (f", {s.not_graded} not graded" if s.not_graded else ""),
            f"  cost     {_money(s.cost_per_task)}/task  {_money(s.cost_per_resolved)}/resolved"
            f"  (total {_money(s.cost_usd)})",
            f"  tokens   {_num(s.tokens_per_task)}/task  {_num(s.tokens_per_resolved)}/resolved",
            f"  time     {s.seconds_per_task:.1f}s/task  {_num(s.seconds_per_resolved, '.1f')}s/resolved"
            f"  (tests {s.test_seconds_per_task:.2f}s, harness {s.harness_seconds_per_task:.2f}s per task)",
            f"  visits   {s.visits_per_task:.1f}/task  reworks {s.reworks}  breaker trips "
            f"{s.breaker_trips}  reviews {s.reviews}"
            + (f" ({s.review_pass_rate:.0%} passed)" if s.review_pass_rate is not None else ""),
        ]
    for p in report.pairs:
        lines += [
            "",
            f"{p.a} vs {p.b} on {p.tasks} tasks: both {p.both}, neither {p.neither}, "
            f"only {p.a} {len(p.only_a)}, only {p.b} {len(p.only_b)}; "
            f"McNemar exact p = {p.p_value:.3g}",
        ]
        if p.only_a:
            lines.append(f"  only {p.a}: {', '.join(p.only_a)}")
        if p.only_b:
            lines.append(f"  only {p.b}: {', '.join(p.only_b)}")
    lines += ["", "tasks:"]
    labels = [s.label for s in report.pipelines]
    for t in report.tasks:
        cells = "  ".join(f"{label}={t.verdicts[label]}" for label in labels)
        lines.append(f"  {t.instance_id}  {cells}")
    return "\n".join(lines) + "\n"
