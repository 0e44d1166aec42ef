"""`swell run` and `swell resume`."""

from __future__ import annotations

import enum
import sys
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from swell.cli.common import RunPrefixArgument, runtime
from swell.cli.render import for_terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from swell.cli.live import LiveDisplay
    from swell.engine.context import GatePrompter, RunPlan
    from swell.engine.state import RunState
    from swell.events.bus import EventSink
    from swell.events.models import BaseEvent
    from swell.manifest.loader import LoadedPipeline
    from swell.ops.rerun import Reuse
    from swell.runtime import Deadline, Runtime
    from swell.store.protocols import RunReader
    from swell.store.rows import GateRow
    from swell.streaming import OutputSink

# `rejected` is an answer (a contract with `on_failure: rejected` turned the work down)
EXIT_CODES = {
    "succeeded": 0,
    "rejected": 0,
    "failed": 1,
    "cancelled": 1,
    "waiting": 3,
    "interrupted": 130,
}
EXIT_TIMEOUT = 124  # as timeout(1): the run took longer than --timeout


class RunOutput(enum.StrEnum):
    text = "text"
    json = "json"
    quiet = "quiet"


RunOutputOption = Annotated[
    RunOutput,
    typer.Option(
        "--output",
        "-o",
        help="text: progress for people; json: one event per line; quiet: nothing but "
        "errors (the exit code tells how the run ended).",
    ),
]
VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="More detail: every event, agent text and tool calls included."
    ),
]
WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="At an approval gate with no terminal to ask (stdin is not a terminal, or "
        "-o json/quiet), wait for `swell approve` from elsewhere instead of stopping "
        "the run there (exit 3).",
    ),
]
TimeoutOption = Annotated[
    str | None,
    typer.Option(
        "--timeout",
        metavar="DURATION",
        help="Stop the run when it takes longer than this (e.g. 90s, 10m, 2h): running "
        "steps are killed, the run is left interrupted (resumable), exit code 124.",
    ),
]


def _deadline(value: str | None) -> Deadline | None:
    from swell.manifest.durations import parse_duration
    from swell.runtime import Deadline

    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--timeout") from None
    if seconds <= 0:
        raise typer.BadParameter("must be more than 0", param_hint="--timeout")
    return Deadline(seconds)


def _sinks(output: RunOutput, run_id: str, verbose: bool) -> list[EventSink]:
    from swell.cli.render import NdjsonPrinter, ProgressPrinter

    if output is RunOutput.quiet:
        return []
    if output is RunOutput.json:
        return [NdjsonPrinter()]
    if verbose:
        from swell.cli.printers import VerbosePrinter

        return [VerbosePrinter(root_run=run_id)]
    return [ProgressPrinter(root_run=run_id)]


def _live_terminal() -> bool:
    """Whether progress goes to a terminal that can redraw a live region."""
    import os

    return sys.stdout.isatty() and os.environ.get("TERM", "") not in ("", "dumb")


def _watchers(
    output: RunOutput, run_id: str, verbose: bool, sinks: list[EventSink]
) -> tuple[list[EventSink], list[OutputSink], LiveDisplay | None]:
    """Who shows running steps' output (cli/live.py): the event sinks (the live display
    replaces the progress printer), the output watchers, and the live display if any."""
    from swell.cli import live

    if output is RunOutput.quiet:
        return sinks, [], None
    if output is RunOutput.json:
        return sinks, [live.NdjsonOutput()], None
    if not verbose and _live_terminal():
        display = live.LiveDisplay(run_id)
        return [display], [display], display
    plain = live.PlainOutput()
    return [*sinks, plain], [plain], None


class _Seeded:
    """A run started `--from-step` continues from its seeded events (ops/rerun.py),
    which the engine records as a resume; its terminal was told already."""

    def __init__(self, sink: EventSink) -> None:
        self.sink, self.first = sink, True

    def emit(self, events: Sequence[BaseEvent]) -> None:
        if self.first:
            self.first = False
            events = [e for e in events if getattr(e, "type", "") != "run.resumed"]
        self.sink.emit(events)


def _prompter(output: RunOutput, auto_approve: bool) -> GatePrompter | None:
    if output is not RunOutput.text or auto_approve or not sys.stdin.isatty():
        return None
    from swell.cli.prompt import TerminalPrompter

    return TerminalPrompter()


def _execute(
    rt: Runtime,
    plan: RunPlan,
    output: RunOutput,
    *,
    verbose: bool = False,
    state: RunState | None = None,
    deadline: Deadline | None = None,
    announced: bool = False,
    wait: bool = False,
) -> None:
    """Run or continue `plan` with this terminal's printers, then exit with its status.
    Without a terminal to ask at an approval gate (and without `wait`), the run stops
    there, `waiting`: exit 3, with the commands that decide the gate and continue."""
    import asyncio

    from swell.runtime import execute

    if output is RunOutput.text and not announced:
        print(f"run {plan.run_id}", flush=True)
    prompter = _prompter(output, plan.options.auto_approve)
    sinks, watchers, display = _watchers(
        output, plan.run_id, verbose, _sinks(output, plan.run_id, verbose)
    )
    if announced and output is RunOutput.text:
        sinks = [_Seeded(sink) for sink in sinks]
    if display is not None:
        display.start()
    try:
        summary = asyncio.run(
            execute(
                rt,
                plan,
                sinks,
                state=state,
                prompter=prompter,
                deadline=deadline,
                watchers=watchers,
                stop_at_gates=prompter is None and not wait,
            )
        )
    finally:
        if display is not None:
            display.stop()
    status, run_id = summary.status, summary.run_id
    timed_out = deadline is not None and deadline.expired
    if timed_out:
        assert deadline is not None
        print(f"{deadline.describe()}; continue with: swell resume {run_id}", file=sys.stderr)
    elif output is RunOutput.quiet and status in ("failed", "cancelled"):
        error = for_terminal(summary.error or status)
        print(f"error: run {run_id} {status}: {error}", file=sys.stderr)
    elif output is RunOutput.quiet and status == "rejected":
        print(f"run {run_id} rejected: {for_terminal(summary.error or '')}")
    elif status == "waiting":
        _print_waiting(rt, run_id, sys.stdout if output is RunOutput.text else sys.stderr)
    elif status == "interrupted" and output is not RunOutput.json:
        print(f"continue with: swell resume {run_id}", file=sys.stderr)
    raise typer.Exit(EXIT_TIMEOUT if timed_out else EXIT_CODES.get(status, 1))


def _print_waiting(
    rt: Runtime, run_id: str, out: TextIO, then: str | None = None, approvals: bool = False
) -> None:
    """What a run that stopped at a gate waits for, and the commands that decide the
    gate (of the run or of a sub-pipeline run) and continue the run (`then`: how a run
    goes on after the decision, when not by `swell resume`)."""
    gates = waiting_gates(rt.store, run_id, approvals=approvals)
    if not gates:
        out.write(f"run {run_id} is waiting; continue it with: swell resume {run_id}\n")
        return
    for gate in gates:
        where = "" if gate.run_id == run_id else f" of sub-pipeline run {gate.run_id}"
        out.write(
            f"run {run_id} is waiting at gate '{gate.step_id}'{where}: {gate.message or ''}\n"
        )
        keys = "|".join(str(c["key"]) for c in gate.choices)
        choice = f" --choice {keys}" if keys else ""
        out.write(
            f"  decide:   swell approve {gate.run_id} {gate.step_id}{choice}"
            f"   (or: swell reject {gate.run_id} {gate.step_id} --reason TEXT)\n"
        )
    out.write(then or f"  continue: swell resume {run_id}\n")
    out.flush()


def waiting_gates(store: RunReader, run_id: str, *, approvals: bool = False) -> list[GateRow]:
    """The undecided gates a waiting run stops at: its own, and its waiting children's
    (`approvals`: only those a person decides, not timers)."""
    found = [
        g
        for g in store.gates(run_id)
        if g.status == "waiting"
        and g.decision is None
        and (not approvals or g.gate_type == "approval")
    ]
    for child in store.children(run_id):
        if child.status == "waiting":
            found += waiting_gates(store, child.id, approvals=approvals)
    return found


def run(
    ctx: typer.Context,
    pipeline: Annotated[
        str, typer.Argument(help="Pipeline name (in .agents/pipelines/) or file path.")
    ],
    positional_input: Annotated[
        str | None,
        typer.Argument(
            metavar="[INPUT]",
            help='The run\'s input, as Wave takes it (`swell run fix "the bug"`); '
            "the same as --input.",
        ),
    ] = None,
    input_text: Annotated[
        str | None,
        typer.Option(
            "--input",
            "-i",
            help="The run's input ({{ input }}). Required when the pipeline's input.type "
            "is a reference type; with --from-step the previous run's input by default.",
        ),
    ] = None,
    auto_approve: Annotated[
        bool, typer.Option("--auto-approve", help="Approve every gate with its default choice.")
    ] = False,
    adapter: Annotated[
        str | None, typer.Option("--adapter", help="Adapter for every prompt step.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model for every prompt step.")
    ] = None,
    from_step: Annotated[
        str | None,
        typer.Option(
            "--from-step",
            metavar="STEP",
            help="Start a new run at STEP, reusing what a previous run left before it "
            "(its steps' outcomes, artifacts, context and workspace).",
        ),
    ] = None,
    previous: Annotated[
        str | None,
        typer.Option(
            "--run",
            metavar="RUN",
            help="With --from-step: the run to reuse (default: the pipeline's newest).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the plan (steps, personas, adapters, models, checks) and exit; "
            "nothing runs and no run is recorded.",
        ),
    ] = False,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="Run in the background: print the run id and return (follow it with "
            "`swell logs RUN --follow`).",
        ),
    ] = False,
    timeout: TimeoutOption = None,
    wait: WaitOption = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar="ENGINE",
            help="Who executes the run: `local` (this process) or `temporal` (swell workers "
            "through a Temporal server; docs/scale-out.md). Default: runtime.engine, else local.",
        ),
    ] = None,
    output: RunOutputOption = RunOutput.text,
    verbose: VerboseOption = False,
) -> None:
    """Run a pipeline. Prints the run id first; exit code 0 only when the run succeeds.

    Before a run is recorded, swell checks what would make it fail for want of
    something you can fix (unknown adapter, missing agent CLI or API key, a persona
    without the tools a step needs, a missing required input) and says how."""
    from swell.engine.context import RunOptions
    from swell.events.redact import MASK
    from swell.ops import preflight
    from swell.runtime import check_pipeline, create_run, start_from_step

    if previous is not None and from_step is None:
        raise typer.BadParameter("--run needs --from-step", param_hint="--run")
    if positional_input is not None and input_text is not None:
        raise typer.BadParameter(
            "give the input once: as the argument after the pipeline, or as --input",
            param_hint="INPUT",
        )
    if positional_input is not None:
        input_text = positional_input
    deadline = _deadline(timeout)
    rt = runtime(ctx)
    loaded, report = check_pipeline(rt, pipeline)
    if output is not RunOutput.quiet:
        for problem in report.warnings:
            print(str(problem), file=sys.stderr)
    reuse = _reuse(rt, loaded, from_step, previous) if from_step else None
    text = input_text if input_text is not None else (reuse.previous.input if reuse else "")
    if reuse is not None and input_text is None and MASK in text:
        reuse.notes.append(
            f"run {reuse.previous.id}'s input held secrets, which swell does not keep; this "
            f"run starts with them masked ({MASK}): give --input to pass them again"
        )
    findings = preflight.check_run(
        rt.project, rt.registries, loaded, input_text=text, adapter=adapter, model=model
    )
    if output is not RunOutput.quiet:
        for note in preflight.run_warnings(rt.project, rt.registries, loaded):
            print(f"warning: {note}", file=sys.stderr)
    if dry_run:
        from swell.cli.dryrun import show_plan

        show_plan(rt, loaded, text, adapter, model, findings, reuse, json=output is RunOutput.json)
        raise typer.Exit(1 if findings else 0)
    preflight.raise_findings(loaded.name, findings)
    options = RunOptions(auto_approve=auto_approve, adapter=adapter, model=model)
    if _engine(rt, engine, from_step, timeout) == "temporal":
        from swell.cli.worker import run_on_engine

        asks = _prompter(output, auto_approve)
        run_on_engine(
            rt,
            loaded,
            text,
            options,
            output,
            verbose=verbose,
            detach=detach,
            stop_at_gates=asks is None and not wait,
            prompter=asks,
        )
    state = None
    if reuse is not None:
        plan, state = start_from_step(rt, loaded, text, options, reuse)
        if output is RunOutput.text:
            print(f"run {plan.run_id}", flush=True)
            _announce(reuse)
    else:
        plan = create_run(rt, loaded, text, options)
    if detach:
        _detach(rt, plan, output, verbose, timeout)
    _execute(
        rt,
        plan,
        output,
        verbose=verbose,
        state=state,
        deadline=deadline,
        announced=bool(reuse),
        wait=wait,
    )


def _engine(rt: Runtime, engine: str | None, from_step: str | None, timeout: str | None) -> str:
    """`--engine`, else runtime.engine, else local; what the engine cannot do yet is refused."""
    chosen = engine or rt.project.manifest.runtime.engine or "local"
    if chosen not in ("local", "temporal"):
        raise typer.BadParameter(
            f"unknown engine '{chosen}': local or temporal", param_hint="--engine"
        )
    if chosen == "temporal" and (from_step or timeout):
        flag = "--from-step" if from_step else "--timeout"
        raise typer.BadParameter("not available with the temporal engine yet", param_hint=flag)
    return chosen


def _reuse(rt: Runtime, loaded: LoadedPipeline, from_step: str, previous: str | None) -> Reuse:
    from swell.ops.rerun import plan_reuse, previous_run

    return plan_reuse(rt.store, loaded, from_step, previous_run(rt.store, loaded.name, previous))


def _announce(reuse: Reuse) -> None:
    reused = ", ".join(reuse.reused) or "no step"
    print(
        f"starting at step {reuse.start}; reusing {reused} from run {reuse.previous.id}",
        flush=True,
    )
    for note in reuse.notes:
        print(f"note: {note}", file=sys.stderr)


def _detach(
    rt: Runtime, plan: RunPlan, output: RunOutput, verbose: bool, timeout: str | None
) -> None:
    """Hand the recorded run to a background process, print its id, and exit."""
    from swell.cli.common import print_json
    from swell.ops.background import spawn, wait_until_claimed
    from swell.store.capabilities import claims

    claims(rt.store).release(plan.run_id)
    extra = ["-o", "json" if output is RunOutput.json else "text"]
    extra += ["--verbose"] if verbose else []
    extra += ["--timeout", timeout] if timeout else []
    extra += ["--wait"]  # no terminal there: a gate waits for `swell approve`
    child = spawn(rt.project.root, plan.run_dir, plan.run_id, extra)
    problem = wait_until_claimed(rt.store, plan.run_id, child)
    if problem:
        print(f"error: run {plan.run_id}: {problem}", file=sys.stderr)
        raise typer.Exit(1)
    if output is RunOutput.json:
        print_json({"run_id": plan.run_id, "pid": child.pid, "log": str(child.log)})
    elif output is RunOutput.quiet:
        print(plan.run_id)
    else:
        print(f"run {plan.run_id} (detached, pid {child.pid}, log {child.log})")
        print(f"follow it: swell logs {plan.run_id} --follow   status: swell status {plan.run_id}")
    raise typer.Exit(0)


def resume(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    timeout: TimeoutOption = None,
    wait: WaitOption = False,
    output: RunOutputOption = RunOutput.text,
    verbose: VerboseOption = False,
) -> None:
    """Continue a run after a crash, Ctrl-C, or a gate decision."""
    from swell.runtime import claim_for_resume

    deadline = _deadline(timeout)
    rt = runtime(ctx)
    _refuse_engine_run(rt, run_id)
    resumed = claim_for_resume(rt, run_id)
    if output is not RunOutput.quiet:
        for note in resumed.notes:
            print(f"note: {note}", file=sys.stderr)
    _execute(
        rt,
        resumed.plan,
        output,
        verbose=verbose,
        state=resumed.state,
        deadline=deadline,
        wait=wait,
    )


def _refuse_engine_run(rt: Runtime, run_id: str) -> None:
    """A run the Temporal engine executes goes on there; nothing here resumes it."""
    from swell.cli.worker import engine_of, refuse_resume

    run = rt.store.get_run(run_id)
    engine = engine_of(run)
    if engine is not None:
        refuse_resume(run, engine)
