"""`swell run` and `swell resume`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from swell.cli.common import Output, OutputOption, RunPrefixArgument, runtime

if TYPE_CHECKING:
    from swell.engine.context import GatePrompter, RunPlan
    from swell.engine.state import RunState
    from swell.events.bus import EventSink
    from swell.runtime import Runtime

EXIT_CODES = {"succeeded": 0, "failed": 1, "cancelled": 1, "waiting": 3, "interrupted": 130}


def _sinks(output: Output, run_id: str) -> list[EventSink]:
    from swell.cli.render import NdjsonPrinter, ProgressPrinter

    return [NdjsonPrinter()] if output is Output.json else [ProgressPrinter(root_run=run_id)]


def _prompter(output: Output, auto_approve: bool) -> GatePrompter | None:
    if output is Output.json or auto_approve or not sys.stdin.isatty():
        return None
    from swell.cli.prompt import TerminalPrompter

    return TerminalPrompter()


def _execute(rt: Runtime, plan: RunPlan, output: Output, state: RunState | None = None) -> None:
    """Run or continue `plan` with this terminal's printers, then exit with its status."""
    import asyncio

    from swell.runtime import execute

    if output is Output.text:
        print(f"run {plan.run_id}", flush=True)
    prompter = _prompter(output, plan.options.auto_approve)
    summary = asyncio.run(
        execute(rt, plan, _sinks(output, plan.run_id), state=state, prompter=prompter)
    )
    status, run_id = summary.status, summary.run_id
    if status == "waiting" and output is Output.text:
        print(
            f"run {run_id} is waiting at a gate: `swell approve {run_id}`, then `swell resume {run_id}`"
        )
    elif status == "interrupted" and output is Output.text:
        print(f"continue with: swell resume {run_id}", file=sys.stderr)
    raise typer.Exit(EXIT_CODES.get(status, 1))


def run(
    ctx: typer.Context,
    pipeline: Annotated[
        str, typer.Argument(help="Pipeline name (in .agents/pipelines/) or file path.")
    ],
    input_text: Annotated[
        str, typer.Option("--input", "-i", help="The run's input ({{ input }}).")
    ] = "",
    auto_approve: Annotated[
        bool, typer.Option("--auto-approve", help="Approve every gate.")
    ] = False,
    adapter: Annotated[
        str | None, typer.Option("--adapter", help="Adapter for every prompt step.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model for every prompt step.")
    ] = None,
    output: OutputOption = Output.text,
) -> None:
    """Run a pipeline. Prints the run id first; exit code 0 only when the run succeeds."""
    from swell.engine.context import RunOptions
    from swell.runtime import check_pipeline, create_run

    rt = runtime(ctx)
    loaded, report = check_pipeline(rt, pipeline)
    for problem in report.warnings:
        print(str(problem), file=sys.stderr)
    options = RunOptions(auto_approve=auto_approve, adapter=adapter, model=model)
    _execute(rt, create_run(rt, loaded, input_text, options), output)


def resume(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    output: OutputOption = Output.text,
) -> None:
    """Continue a run after a crash, Ctrl-C, or a gate decision."""
    from swell.runtime import claim_for_resume

    rt = runtime(ctx)
    resumed = claim_for_resume(rt, run_id)
    for note in resumed.notes:
        print(f"note: {note}", file=sys.stderr)
    _execute(rt, resumed.plan, output, resumed.state)
