"""`swell diff`, `swell fork`, `swell rewind`: a run's checkpoints (docs/time-travel.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from swell.cli.common import RunPrefixArgument, runtime, store_runtime
from swell.cli.runs import (
    NoSandboxOption,
    RunOutput,
    RunOutputOption,
    TimeoutOption,
    VerboseOption,
    _check_sandbox,
    _deadline,
    _execute,
)

AtOption = Annotated[str, typer.Option("--at", metavar="STEP#VISIT", help="The visit to fork at.")]


def diff(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    at: Annotated[
        str | None,
        typer.Argument(
            metavar="[STEP[#VISIT]]",
            help="A visit (a step alone: its newest visit); without it, the whole run.",
        ),
    ] = None,
    stat: Annotated[bool, typer.Option("--stat", help="Files changed, not the diff.")] = False,
) -> None:
    """What a visit (or the whole run) changed in its workspace, from its checkpoints,
    as a unified diff."""
    from swell.ops.checkpoints import diff as diff_of
    from swell.ops.checkpoints import parse_at

    rt = store_runtime(ctx)
    run = rt.store.get_run(run_id)
    where = parse_at(at) if at is not None else None
    text = diff_of(rt.store, rt.state_dir, run.id, where, stat)
    if not text:
        print("no changes", file=sys.stderr)
        return
    sys.stdout.write(text)


def fork(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    at: AtOption,
    input_text: Annotated[
        str | None, typer.Option("--input", help="The fork's input (default: the origin's).")
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set", metavar="context.KEY=VALUE", help="A context value from the fork on."
        ),
    ] = None,
    pipeline_file: Annotated[
        Path | None,
        typer.Option("--pipeline-file", help="Continue with this pipeline file instead."),
    ] = None,
    timeout: TimeoutOption = None,
    no_sandbox: NoSandboxOption = False,
    output: RunOutputOption = RunOutput.text,
    verbose: VerboseOption = False,
) -> None:
    """A new run that starts where visit STEP#VISIT of RUN left off: the origin's events
    up to it (copied, not run again), its workspace checkpoint, then on from there."""
    from swell.ops.checkpoints import parse_at
    from swell.ops.timetravel import parse_sets
    from swell.travel import Fork, fork_run

    rt = runtime(ctx)
    change = Fork(input=input_text, sets=parse_sets(sets or []), pipeline_file=pipeline_file)
    new_id = fork_run(rt, run_id, parse_at(at), change)
    if output is not RunOutput.quiet:
        print(f"forked {run_id} at {at}", file=sys.stderr)
    _continue(ctx, new_id, timeout, no_sandbox, output, verbose)


def rewind(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    to: Annotated[str, typer.Option("--to", metavar="STEP#VISIT", help="The visit to go on from.")],
    timeout: TimeoutOption = None,
    no_sandbox: NoSandboxOption = False,
    output: RunOutputOption = RunOutput.text,
    verbose: VerboseOption = False,
) -> None:
    """Take RUN back to where visit STEP#VISIT left off and continue it from there; the
    later visits stay in its log, abandoned."""
    from swell.ops.checkpoints import parse_at
    from swell.travel import rewind_run

    rt = runtime(ctx)
    rewind_run(rt, run_id, parse_at(to))
    if output is not RunOutput.quiet:
        print(f"rewound {run_id} to {to}", file=sys.stderr)
    # here, whatever engine ran it: a Temporal run's workflow has ended for good (the
    # server never starts a workflow id twice), as a fork of it goes on here too
    _continue(ctx, rt.store.get_run(run_id).id, timeout, no_sandbox, output, verbose, local=True)


def _continue(
    ctx: typer.Context,
    run_id: str,
    timeout: str | None,
    no_sandbox: bool,
    output: RunOutput,
    verbose: bool,
    local: bool = False,
) -> None:
    """Continue the prepared run as `swell resume` does (`local`: in this process)."""
    from swell.executors import executor_for, executor_named

    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    executor = executor_named(rt, "local") if local else executor_for(run)
    resumed = executor.resume(rt, run)
    if resumed.plan is not None:
        resumed.plan.options.no_sandbox = no_sandbox
        _check_sandbox(rt, resumed.plan.options)
    _execute(rt, executor, resumed, output, verbose=verbose, deadline=_deadline(timeout))
