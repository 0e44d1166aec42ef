"""`swell status`, `swell list`, `swell logs`, `swell artifacts`: reading the store."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any

import typer

from swell.cli.common import (
    Output,
    OutputOption,
    RunArgument,
    print_json,
    run_id_given,
    runtime,
)

if TYPE_CHECKING:
    from swell.store.rows import Owner, RunRow, VisitRow

FOLLOW_POLL = 0.25
MAX_LIST = 1_000_000  # `swell list -n`: more than a store holds, less than SQLite's integers


def _run_dict(run: RunRow, owner: Owner | None) -> dict[str, Any]:
    hidden = ("options", "owner_pid", "owner_host")
    data = {k: v for k, v in asdict(run).items() if k not in hidden}
    data["owner"] = asdict(owner) if owner else None  # the process executing it now
    data["stale"] = run.status in ("running",) and owner is None
    return data


def _status_word(run: RunRow, owner: Owner | None) -> str:
    if run.status == "running" and owner is None:
        return "running (process gone: swell resume)"
    return run.status


def list_runs(
    ctx: typer.Context,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, max=MAX_LIST, help="How many runs to show.")
    ] = 20,
    output: OutputOption = Output.text,
) -> None:
    """Runs, newest first."""
    rt = runtime(ctx)
    runs = rt.store.list_runs(limit)
    if output is Output.json:
        print_json([_run_dict(r, rt.store.owner(r.id)) for r in runs])
        return
    if not runs:
        print("no runs yet (start one with `swell run PIPELINE`)")
        return
    width = max(len(r.id) for r in runs)
    for r in runs:
        parent = f"  (child of {r.parent_run_id})" if r.parent_run_id else ""
        print(
            f"{r.id:<{width}}  {_status_word(r, rt.store.owner(r.id)):<10}  {r.visits:>4} visits  "
            f"{r.created_at}{parent}"
        )


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
    rt = runtime(ctx)
    if run_id is None:
        runs = rt.store.list_runs(1, include_children=False)
        if not runs:
            print("no runs yet")
            return
        run = runs[0]
    else:
        run = rt.store.get_run(run_id)
    owner = rt.store.owner(run.id)
    visits = rt.store.visits(run.id)
    gates = [g for g in rt.store.gates(run.id) if g.status == "waiting"]
    context = rt.store.context(run.id)
    children = rt.store.children(run.id)
    reviews = rt.store.reviews(run.id)
    if output is Output.json:
        print_json(
            {
                **_run_dict(run, owner),
                "steps": [asdict(v) for v in visits],
                "waiting_gates": [asdict(g) for g in gates],
                "context": context,
                "children": [c.id for c in children],
                "reviews": [asdict(r) for r in reviews],
            }
        )
        return
    print(f"run       {run.id}")
    print(f"pipeline  {run.pipeline}")
    print(f"status    {_status_word(run, owner)}")
    if run.error:
        print(f"error     {run.error}")
    print(f"visits    {run.visits}")
    print(
        f"started   {run.started_at or run.created_at}"
        + (f"   finished {run.finished_at}" if run.finished_at else "")
    )
    if run.parent_run_id:
        print(f"parent    {run.parent_run_id} (step {run.parent_step_id})")
    if visits:
        print("\nsteps")
        by_step: dict[str, list[VisitRow]] = {}
        for v in visits:
            by_step.setdefault(v.step_id, []).append(v)
        for step_id, vs in by_step.items():
            last = vs[-1]
            print(
                f"  {step_id:<24} {len(vs):>3} visits  last: {last.status:<11} "
                f"{'' if last.exit_code is None else f'exit {last.exit_code}'}"
            )
    for g in gates:
        print(f"\nwaiting at gate '{g.step_id}': {g.message or ''}")
        if g.choices:
            print("  choices: " + ", ".join(f"[{c['key']}] {c['label']}" for c in g.choices))
        print(
            f"  swell approve {run.id} {g.step_id}   |   swell reject {run.id} {g.step_id} --reason TEXT"
        )
    if reviews:
        print("\nreviews")
        for r in reviews:
            print(
                f"  {r.step_id} #{r.visit}: {r.reviewer} → {r.verdict or 'no verdict'}"
                f"  ({len(r.issues)} issues, {r.tokens_in}→{r.tokens_out} tok)"
            )
    if context:
        print("\ncontext")
        for key, value in context.items():
            print(f"  {key} = {value}")
    if children:
        print("\nsub-pipelines")
        for c in children:
            print(f"  {c.id}  {c.status}")


def logs(
    ctx: typer.Context,
    run_id: RunArgument,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until the run ends.")
    ] = False,
    step: Annotated[str | None, typer.Option("--step", help="Only events of this step.")] = None,
    output: OutputOption = Output.text,
) -> None:
    """A run's events; with --step, each visit's output too."""
    from swell.cli.render import ProgressPrinter
    from swell.events.models import StepFinished, parse_event

    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    printer = ProgressPrinter(root_run=run.id)
    seq = 0
    while True:
        for data in rt.store.raw_events(run.id, seq):
            event = parse_event(data)
            seq = event.seq
            if step and event.step_id != step:
                continue
            if output is Output.json:
                sys.stdout.write(data + "\n")
                continue
            line = printer.line(event)
            if line:
                print(f"{event.ts[11:19]} {line}")
            if step and isinstance(event, StepFinished) and event.output_tail:
                for out_line in event.output_tail.rstrip().splitlines()[-40:]:
                    print(f"    | {out_line}")
        sys.stdout.flush()
        if not follow:
            return
        current = rt.store.get_run(run.id)
        if (
            current.status in ("succeeded", "failed", "cancelled", "interrupted")
            and seq >= current.last_seq
        ):
            return
        time.sleep(FOLLOW_POLL)


def artifacts(
    ctx: typer.Context,
    run_id: RunArgument,
    output: OutputOption = Output.text,
) -> None:
    """Files a run produced: command output logs and declared output artifacts."""
    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    rows = rt.store.artifacts(run.id)
    if output is Output.json:
        print_json([asdict(a) for a in rows])
        return
    if not rows:
        print("no artifacts")
        return
    for a in rows:
        print(
            f"{a.step_id:<20} #{a.visit:<3} {a.name:<16} {a.size:>9} B  {a.sha256[:12]}  {a.path}"
        )
