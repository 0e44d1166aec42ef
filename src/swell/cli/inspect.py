"""`swell status`, `swell list`, `swell logs`, `swell artifacts`: reading the store."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

from swell.cli import ledger
from swell.cli import params as typer  # typer's names, without typer (params.py)
from swell.cli.common import (
    Output,
    OutputOption,
    print_json,
    project_store,
    run_id_given,
)
from swell.cli.pick import OptionalRunArgument
from swell.executors import held_by

if TYPE_CHECKING:
    from swell.events.models import ChildRunStarted
    from swell.store.protocols import RunReader
    from swell.store.rows import Owner, RunRow, StepRow

MAX_LIST = 1_000_000  # `swell list -n`: more than a store holds, less than SQLite's integers
MAX_TAIL = 1_000_000_000  # `swell logs --tail`: more events than a run holds
DEFAULT_TAIL = 200  # lines `swell logs` shows of a run without --all or --tail


def _run_dict(run: RunRow, owner: Owner | None) -> dict[str, Any]:
    hidden = ("options", "owner_pid", "owner_host")
    data = {k: v for k, v in asdict(run).items() if k not in hidden}
    data["owner"] = asdict(owner) if owner else None  # the process executing it now
    # a run the Temporal engine executes has no owning process here, and is not stale
    held = held_by(run)
    data["stale"] = run.status in ("running",) and owner is None and held is None
    return data


def _status_word(run: RunRow, owner: Owner | None) -> str:
    held = held_by(run)
    if run.status == "running" and held is not None:
        return f"running (on {held})"
    if run.status == "running" and owner is None:
        return "running (process gone: swell resume)"
    return run.status


def _running_elapsed(steps: list[StepRow]) -> dict[tuple[str, int], int]:
    """How long each running visit of the run has been running (ms), by (step, visit).
    Read from the store, so it reads the same while the run goes on in another process;
    a step runs one visit at a time, its last, so the steps' summary has them all (a
    30,000-visit run's visits are not read)."""
    now = datetime.now(UTC)
    out: dict[tuple[str, int], int] = {}
    for step in steps:
        if step.last_status != "running" or not step.last_started_at:
            continue
        started = datetime.fromisoformat(step.last_started_at.replace("Z", "+00:00"))
        elapsed = int((now - started).total_seconds() * 1000)
        out[(step.step_id, step.last_visit)] = max(elapsed, 0)
    return out


def _seconds(ms: int) -> str:
    """An elapsed time as progress prints it (1.2s, 3m05s)."""
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    minutes, secs = divmod(ms // 1000, 60)
    return f"{minutes}m{secs:02d}s"


def list_runs(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, max=MAX_LIST, help="How many runs to show.")
    ] = 20,
    output: OutputOption = Output.text,
) -> None:
    """Runs, newest first."""
    store = project_store(ctx)
    runs = store.list_runs(limit)
    if output is Output.json:
        print_json([_run_dict(r, store.owner(r.id)) for r in runs])
        return
    if not runs:
        print("no runs yet (start one with `swell run PIPELINE`)")
        return
    # every column as wide as its widest entry: a long status ("running (process gone:
    # swell resume)") must not push the columns after it out of line
    # only a running run's word depends on its owner: asking is a lock test per run
    words = [_status_word(r, store.owner(r.id) if r.status == "running" else None) for r in runs]
    width, status_width = max(len(r.id) for r in runs), max(len(w) for w in words)
    visits_width = max(4, *(len(str(r.visits)) for r in runs))
    for r, word in zip(runs, words, strict=True):
        parent = f"  (child of {r.parent_run_id})" if r.parent_run_id else ""
        print(
            f"{r.id:<{width}}  {word:<{status_width}}  {r.visits:>{visits_width}} visits  "
            f"{r.created_at}{parent}"
        )


def _say(text: str) -> None:
    """A line of `swell status`: values steps and agents wrote are in it (errors,
    outcomes, context), escaped for the terminal (cli/render.py `for_terminal`)."""
    from swell.cli.render import for_terminal

    print(for_terminal(text))


def status(
    ctx: typer.Context,
    run_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[RUN]", help="Run id; default: the newest run.", callback=run_id_given
        ),
    ] = None,
    output: OutputOption = Output.text,
) -> None:
    """A run's status, its steps, waiting gates and context."""
    from swell.ops.lineage import lineage

    store = project_store(ctx)
    if run_id is None:
        runs = store.list_runs(1, include_children=False)
        if not runs:
            print("no runs yet")
            return
        run = runs[0]
    else:
        run = store.get_run(run_id)
    # the text shows an owner only for a running run (`_status_word`): no lock test else
    shown = run.status == "running" or output is Output.json
    owner = store.owner(run.id) if shown else None
    gates = [g for g in store.gates(run.id) if g.status == "waiting"]
    context = store.context(run.id)
    children = store.children(run.id)
    reviews = store.reviews(run.id)
    steps = store.steps(run.id)  # counted by the store: a long run has many visits
    elapsed = _running_elapsed(steps)
    text = store.pipeline_text(run.id)
    spent, outputs = ledger.run_cost(steps, reviews), ledger.outputs_of(store, run.id, text)
    outcomes = ledger.outcomes_of(store, run.id, text)
    if output is Output.json:
        print_json(
            {
                **_run_dict(run, owner),
                "steps": [
                    {**asdict(v), "elapsed_ms": elapsed.get((v.step_id, v.visit))}
                    for v in store.visits(run.id)
                ],
                "waiting_gates": [asdict(g) for g in gates],
                "context": context,
                "children": [c.id for c in children],
                "child_runs": _child_runs(store, run.id, children),
                "reviews": [asdict(r) for r in reviews],
                "cost_usd": spent,
                "pipeline_outputs": ledger.outputs_json(outputs),
                "outcomes": outcomes,
                **lineage(store, run.id),
            }
        )
        return
    _say(f"run       {run.id}")
    _say(f"pipeline  {run.pipeline}")
    _say(f"status    {_status_word(run, owner)}")
    if run.error:
        _say(f"error     {run.error}")
    _say(f"visits    {run.visits}")
    if spent:
        _say(f"cost      {ledger.money(spent)}")
    _say(
        f"started   {run.started_at or run.created_at}"
        + (f"   finished {run.finished_at}" if run.finished_at else "")
    )
    if run.parent_run_id:
        _say(f"parent    {run.parent_run_id} (step {run.parent_step_id})")
    _say_lineage(lineage(store, run.id))
    if steps:
        _say("\nsteps")
        for step in steps:
            code = step.last_exit_code
            took = elapsed.get((step.step_id, step.last_visit))
            _say(
                f"  {step.step_id:<24} {step.visits:>3} visits  last: {step.last_status:<11} "
                f"{'' if code is None else f'exit {code}'}"
                + ("" if took is None else f"for {_seconds(took)}")
                + ledger.step_note(step)
            )
    for g in gates:
        _say(f"\nwaiting at gate '{g.step_id}': {g.message or ''}")
        if g.choices:
            _say("  choices: " + ", ".join(f"[{c['key']}] {c['label']}" for c in g.choices))
        _say(
            f"  swell approve {run.id} {g.step_id}   |   swell reject {run.id} {g.step_id} --reason TEXT"
        )
    if reviews:
        _say("\nreviews")
        for r in reviews:
            _say(
                f"  {r.step_id} #{r.visit}: {r.reviewer} → {r.verdict or 'no verdict'}"
                f"  ({len(r.issues)} issues, {r.tokens_in}→{r.tokens_out} tok)"
            )
    if outcomes:
        _say("\noutcomes")
        for o in outcomes:
            _say(f"  {o['label']}: {o['value']}   (step {o['step_id']})")
    ledger.print_outputs(outputs)
    if context:
        _say("\ncontext")
        for key, value in context.items():
            _say(f"  {key} = {value}")
    if children:
        _say("\nsub-pipelines")
        for c in _child_runs(store, run.id, children):
            item = "" if c["item"] is None else f" item {c['item']}"
            where = f"{c['step_id']}{item}" if c["step_id"] else ""
            _say(f"  {where:<24} {c['pipeline'] or '':<20} {c['status']:<11} {c['run_id']}")


def logs(
    ctx: typer.Context,
    run_id: OptionalRunArgument = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until the run ends.")
    ] = False,
    step: Annotated[
        str | None, typer.Option("--step", help="Only events of this step, with its output.")
    ] = None,
    errors: Annotated[
        bool,
        typer.Option(
            "--errors",
            help="Only errors: failed visits and contracts, limits, the breaker, "
            "interruptions, rejected gates, a run that did not succeed.",
        ),
    ] = False,
    tail: Annotated[
        int | None,
        typer.Option(
            "--tail",
            "-n",
            min=0,
            max=MAX_TAIL,
            help=f"Only the last N lines (then --follow goes on); without --follow, "
            f"--step or -o json the default is the last {DEFAULT_TAIL}.",
        ),
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Every event of the run, however many.")
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="Only events since then: a duration back from now (10m, 2h, 1d) or a time.",
        ),
    ] = None,
    output: OutputOption = Output.text,
) -> None:
    """A run's events (default: the newest run); with --step, each visit's output too
    (as it was printed, while it runs). --follow ends when the run ends, or with exit
    code 1 when no process executes the run any more."""
    from swell.ops.logs import LogFilter, since_time

    try:
        cutoff = since_time(since)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from None
    where = LogFilter(step=step, errors=errors, since=cutoff)
    if follow or step:  # with the output stored while visits ran
        from swell.cli.live import show_logs as show_live

        code = show_live(
            project_store(ctx),
            run_id,
            follow=follow,
            tail=tail,
            json=output is Output.json,
            where=where,
        )
        if code:
            raise typer.Exit(code)
        return
    from swell.cli.history import show_logs

    # a person reads the end of a run: the last lines by default, read from its end
    # (docs/cli.md); scripts reading NDJSON get every event
    default = tail is None and not every and output is Output.text
    show_logs(
        project_store(ctx),
        run_id,
        tail=DEFAULT_TAIL if default else None if every else tail,
        json=output is Output.json,
        where=where,
        told=default,
    )


def artifacts(
    ctx: typer.Context,
    run_id: OptionalRunArgument = None,
    step: Annotated[str | None, typer.Option("--step", help="Only this step's artifacts.")] = None,
    visit: Annotated[
        int | None, typer.Option("--visit", min=1, help="Only this visit's artifacts.")
    ] = None,
    show: Annotated[
        str | None,
        typer.Option(
            "--show",
            metavar="NAME",
            help="Print artifact NAME's bytes as its visit recorded them (the newest visit's "
            "unless --visit names one); a version no longer held is an error.",
        ),
    ] = None,
    export: Annotated[
        Path | None,
        typer.Option(
            "--export",
            metavar="DIR",
            help="Copy the newest version (or --visit's) of each artifact to DIR/STEP/NAME "
            "(links are never followed; a version no longer held is not copied).",
        ),
    ] = None,
    output: OutputOption = Output.text,
) -> None:
    """Files a run produced (default: the newest run): command output logs and declared
    output artifacts."""
    from swell.cli.history import ArtifactQuery, show_artifacts

    query = ArtifactQuery(step=step, visit=visit, show=show, export=export)
    code = show_artifacts(project_store(ctx), run_id, query, json=output is Output.json)
    if code:
        raise typer.Exit(code)


def _say_lineage(found: dict[str, Any]) -> None:
    """A fork's origin, the forks of a run, its rewinds (docs/time-travel.md)."""
    origin = found["forked_from"]
    if origin:
        _say(f"forked    from {origin['run']} at {origin['at']}")
    for fork in found["forks"]:
        _say(f"fork      {fork['run']} (at {fork['at']})")
    for back in found["rewinds"]:
        _say(f"rewound   to {back['to']} (later visits abandoned, kept in the log)")


def _child_runs(store: RunReader, run_id: str, children: list[RunRow]) -> list[dict[str, Any]]:
    """Each child run with the step (and the iterate item) that started it, in the order
    they started; children started before items were recorded have `item` None."""
    # events of that one kind: parsed (the event models imported) only when there are some
    found = store.events_of_kind(run_id, ["child.started"])
    started = {e.child_run_id: e for e in cast("list[ChildRunStarted]", found)}
    rows = []
    for child in children:
        event = started.get(child.id)
        rows.append(
            {
                "run_id": child.id,
                "status": child.status,
                "step_id": event.step_id if event else child.parent_step_id,
                "visit": event.visit if event else None,
                "item": event.item if event else None,
                "pipeline": event.pipeline if event else child.pipeline,
            }
        )
    rows.sort(key=lambda r: (r["step_id"] or "", r["visit"] or 0, r["item"] or 0))
    return rows
