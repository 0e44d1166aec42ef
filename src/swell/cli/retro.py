"""`swell retro RUN` and `swell retro stats`: a run's retrospective, numbers over runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import click
import typer
from typer.core import TyperGroup

from swell.cli.common import Output, OutputOption, print_json, project_dir
from swell.cli.pick import OptionalRunArgument, run_or_newest
from swell.cli.render import for_terminal

if TYPE_CHECKING:
    from swell.retro.models import Retro, Stats


class _RunByDefault(TyperGroup):
    """`swell retro RUN ...` is `swell retro show RUN ...`: a first argument that names
    no subcommand is a run, and no run at all is the newest (as `status` and `logs`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        first = next((a for a in args if not a.startswith("-")), None)
        helping = any(a in ("--help", "-h") for a in args) and first is None
        if not helping and first not in self.commands:
            args = ["show", *args]
        return super().parse_args(ctx, args)


retro = typer.Typer(
    cls=_RunByDefault,
    name="retro",
    # `show` is hidden, so its options are told here: `swell retro --help` is where to look
    help="A run's retrospective: `swell retro [RUN] [--narrate PERSONA] [-o json]` (the "
    "newest run by default; --narrate has that persona's agent write a summary too), or "
    "numbers over runs (`retro stats`).",
    add_completion=False,
)


@retro.command("show", hidden=True)
def show(
    ctx: typer.Context,
    run_id: OptionalRunArgument = None,
    narrate: Annotated[
        str | None,
        typer.Option(
            "--narrate",
            metavar="PERSONA",
            help="Have this persona's agent write a summary too (the numbers never depend on it).",
        ),
    ] = None,
    output: OutputOption = Output.text,
) -> None:
    """A run's smoothness, friction points, tokens, cost, durations and loops."""
    from swell.retro.record import stored_retro
    from swell.retro.run import build_retro
    from swell.store.location import open_project_store, state_dir_for

    if narrate is None:
        store = open_project_store(project_dir(ctx))
        found = build_retro(store, run_or_newest(store, run_id).id)
        root = _root(ctx)
        kept = stored_retro(state_dir_for(root), found.run_id) if root else None
        if kept is not None and kept.narrative:
            found.narrative, found.narrator = kept.narrative, kept.narrator
    else:
        found = _narrated(ctx, run_id, narrate)
    if output is Output.json:
        print_json(found.model_dump(mode="json"))
    else:
        print(for_terminal(retro_text(found)), end="")  # an agent may narrate it


def _root(ctx: typer.Context) -> Any:
    from swell.errors import SwellError
    from swell.manifest.discovery import find_project_root

    try:
        return find_project_root(project_dir(ctx))
    except SwellError:
        return None


def _narrated(ctx: typer.Context, run_id: str | None, persona: str) -> Retro:
    from swell.cli.common import runtime
    from swell.retro.narrate import narrate
    from swell.retro.record import save_retro
    from swell.retro.run import build_retro

    rt = runtime(ctx)
    found = build_retro(rt.store, run_or_newest(rt.store, run_id).id)
    manifest = rt.project.manifest
    model = manifest.runtime.retros.narrate_model
    found.narrative = narrate(
        found, manifest, rt.project.root, rt.registries.adapters, persona, model
    )
    found.narrator = persona
    save_retro(rt.state_dir, found)
    return found


@retro.command("stats")
def stats(
    ctx: typer.Context,
    pipeline: Annotated[
        str | None, typer.Option("--pipeline", "-p", help="Only this pipeline's runs.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only runs created since: 7d, 12h, 30m, 2w, or a date."),
    ] = None,
    output: OutputOption = Output.text,
) -> None:
    """Review pass rate, rework after review, tokens, cost, loops, friction, durations."""
    from swell.retro.stats import compute_stats, since_time
    from swell.store.location import open_project_store

    start = since_time(since)
    store = open_project_store(project_dir(ctx))
    found = compute_stats(store, pipeline, start)
    if output is Output.json:
        print_json(found.model_dump(mode="json"))
    else:
        print(for_terminal(stats_text(found)), end="")


# ------------------------------------------------------------------------ text


def _ms(value: int | None) -> str:
    if value is None:
        return "-"
    if value < 1000:
        return f"{value}ms"
    return f"{value / 1000:.1f}s" if value < 120_000 else f"{value / 60_000:.1f}min"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def retro_text(r: Retro) -> str:
    t = r.totals
    lines = [
        f"run {r.run_id}  {r.pipeline}  {r.status}",
        f"smoothness {r.smoothness}/100 ({r.rating})  {r.visits} visits  {_ms(r.duration_ms)}",
        f"tokens {t.tokens_in}→{t.tokens_out}  reviews {t.review_tokens_in}→"
        f"{t.review_tokens_out}  cost ${t.total_cost_usd:.4f}"
        + (f"  gates waited {_ms(r.gate_wait_ms)}" if r.gate_wait_ms else ""),
        f"reviews {r.reviews_passed}/{r.reviews} passed",
        "friction: " + (", ".join(f"{k} {n}" for k, n in r.counts.items() if n) or "none"),
    ]
    for p in r.friction:
        where = f"{p.step_id}#{p.visit}" if p.visit else (p.step_id or "-")
        lines.append(f"  {p.kind:<16} {where:<20} {p.detail}")
        lines += [f"      {item}" for item in p.feedback]
    lines.append("steps:")
    for s in r.steps:
        lines.append(
            f"  {s.step_id:<20} {s.visits} visit(s) {s.failed} failed  "
            f"{s.tokens_in}→{s.tokens_out} tok  ${s.cost_usd:.4f}  {_ms(s.duration_ms)}"
            + (f"  review {s.review_tokens} tok" if s.review_tokens else "")
        )
    for loop in r.loops:
        lines.append(f"loop {loop.step_id}: {loop.visits} visits")
        for c in loop.changes:
            lines.append(f"  {c.step_id}#{c.visit} ({c.reason}) → {c.outcome or 'running'}")
            if c.driven_by:
                lines.append(f"      because {c.driven_by}")
            if c.files:
                lines.append(f"      files: {', '.join(c.files)}")
            if c.artifacts_changed:
                lines.append(f"      changed: {', '.join(c.artifacts_changed)}")
    if r.narrative:
        lines += [f"narrative ({r.narrator or 'agent'}):", r.narrative]
    return "\n".join(lines) + "\n"


def stats_text(s: Stats) -> str:
    scope = s.pipeline or "all pipelines"
    period = f" since {s.since}" if s.since else ""
    if not s.runs:
        return f"no runs of {scope}{period}\n"
    statuses = ", ".join(f"{k} {n}" for k, n in sorted(s.statuses.items()))
    lines = [
        f"{s.runs} runs of {scope}{period}: {statuses}",
        f"success rate {_pct(s.success_rate)}  smoothness avg {s.smoothness_avg}  "
        + "  ".join(f"{k} {n}" for k, n in s.ratings.items()),
        f"duration median {_ms(s.duration.median_ms)}  p95 {_ms(s.duration.p95_ms)}",
        f"tokens {s.tokens} ({s.tokens_per_run:.0f}/run)  cost ${s.cost_usd:.4f} "
        f"(${s.cost_per_run:.4f}/run)",
        f"reviews {s.reviews}  pass rate {_pct(s.review_pass_rate)}  "
        f"avg {s.review_tokens_avg or 0:.0f} tok ${s.review_cost_avg or 0:.4f}  "
        f"rework after review {_pct(s.rework_after_review_rate)}",
        f"retries {s.retries}  breaker trips {s.breaker_trips}  limit hits {s.limit_hits}",
        "friction: " + (", ".join(f"{k} {n}" for k, n in s.friction.items() if n) or "none"),
        "steps:",
    ]
    for st in s.steps:
        review = f"  reviews {st.reviews} pass {_pct(st.review_pass_rate)}" if st.reviews else ""
        lines.append(
            f"  {st.pipeline + '/' + st.step_id:<30} {st.visits_per_run:.2f} visits/run "
            f"(max {st.max_visits}, {st.failed} failed)  {st.tokens_per_visit:.0f} tok/visit  "
            f"${st.cost_per_run:.4f}/run  median {_ms(st.median_ms)} p95 {_ms(st.p95_ms)}" + review
        )
    return "\n".join(lines) + "\n"
