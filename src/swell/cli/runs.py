"""`swell run` and `swell resume`."""

from __future__ import annotations

import enum
import sys
from typing import TYPE_CHECKING, Annotated, NoReturn, TextIO

from swell.cli import params as typer  # typer's names, without typer (params.py)
from swell.cli.common import RunPrefixArgument, runtime
from swell.cli.render import for_terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from swell.cli.live import LiveDisplay
    from swell.engine.visit.context import GatePrompter, RunOptions
    from swell.events.bus import EventSink
    from swell.events.models import BaseEvent
    from swell.executors.base import Ending, Executor, Started
    from swell.manifest.loader import LoadedPipeline
    from swell.ops.rerun import Reuse
    from swell.runtime import Deadline, Runtime
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
NoSandboxOption = Annotated[
    bool,
    typer.Option(
        "--no-sandbox",
        help="Run without the sandbox wave.yaml asks for (runtime.sandbox): steps see your "
        "files, environment and network. Warned about and recorded in the run's events.",
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
    executor: Executor,
    started: Started,
    output: RunOutput,
    *,
    verbose: bool = False,
    deadline: Deadline | None = None,
    announced: bool = False,
    wait: bool = False,
) -> NoReturn:
    """Follow a started run with this terminal's printers, then exit with its status.
    Without a terminal to ask at an approval gate (and without `wait`), following stops
    there, `waiting`: exit 3, with the commands that decide the gate and go on."""
    import asyncio

    from swell.executors.base import Watch

    run_id = started.run_id
    if output is RunOutput.text and not announced:
        print(f"run {run_id}", flush=True)
    prompter = _prompter(output, started.auto_approve)
    sinks = _sinks(output, run_id, verbose)
    watchers: list[OutputSink] = []
    display: LiveDisplay | None = None
    if executor.live_output:
        sinks, watchers, display = _watchers(output, run_id, verbose, sinks)
    if announced and output is RunOutput.text:
        sinks = [_Seeded(sink) for sink in sinks]
    watch = Watch(sinks, watchers, prompter, prompter is None and not wait, deadline, _note)
    if display is not None:
        display.start()
    try:
        ending = asyncio.run(executor.follow(rt, started, watch))
    except KeyboardInterrupt:  # the run goes on elsewhere; say where
        print(executor.interrupted_hint(run_id), file=sys.stderr)
        raise typer.Exit(EXIT_CODES["interrupted"]) from None
    finally:
        if display is not None:
            display.stop()
    _report(rt, executor, ending, output, deadline)


def _note(line: str) -> None:
    print(for_terminal(line), file=sys.stderr)


def _report(
    rt: Runtime, executor: Executor, ending: Ending, output: RunOutput, deadline: Deadline | None
) -> NoReturn:
    """Say how a followed run ended, as fits `output`, and exit with its code."""
    status, run_id = ending.status, ending.run_id
    timed_out = deadline is not None and deadline.expired
    if timed_out:
        assert deadline is not None
        print(f"{deadline.describe()}; continue with: swell resume {run_id}", file=sys.stderr)
    elif output is RunOutput.quiet and status in ("failed", "cancelled"):
        error = for_terminal(ending.error or status)
        print(f"error: run {run_id} {status}: {error}", file=sys.stderr)
    elif output is RunOutput.quiet and status == "rejected":
        print(f"run {run_id} rejected: {for_terminal(ending.error or '')}")
    elif status == "waiting":
        out = sys.stdout if output is RunOutput.text else sys.stderr
        _print_waiting(rt, executor, run_id, out)
    elif status == "interrupted" and output is not RunOutput.json:
        print(executor.interrupted_hint(run_id), file=sys.stderr)
    raise typer.Exit(EXIT_TIMEOUT if timed_out else EXIT_CODES.get(status, 1))


def _print_waiting(rt: Runtime, executor: Executor, run_id: str, out: TextIO) -> None:
    """What a run that stopped at a gate waits for, the commands that decide the gate
    (of the run or of a sub-pipeline run), and how the run goes on after."""
    from swell.executors.base import waiting_gates

    gates = waiting_gates(rt.store, run_id, approvals=executor.timers_go_on)
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
    out.write(executor.waiting_hint(run_id))
    out.flush()


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
    no_sandbox: NoSandboxOption = False,
    output: RunOutputOption = RunOutput.text,
    verbose: VerboseOption = False,
) -> None:
    """Run a pipeline. Prints the run id first; exit code 0 only when the run succeeds.

    Before a run is recorded, swell checks what would make it fail for want of
    something you can fix (unknown adapter, missing agent CLI or API key, a persona
    without the tools a step needs, a missing required input) and says how."""
    import asyncio

    from swell.engine.visit.context import RunOptions
    from swell.events.redact import MASK
    from swell.manifest.loader import load_pipeline
    from swell.ops import preflight
    from swell.runtime import check_loaded

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
    options = RunOptions(
        auto_approve=auto_approve, adapter=adapter, model=model, no_sandbox=no_sandbox
    )
    loaded = load_pipeline(rt.project.root, pipeline)
    if not (dry_run or detach or from_step):  # this process goes on to execute it
        _start_boxes(rt, loaded, options, engine)
    report = check_loaded(rt, loaded)
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
    _check_sandbox(rt, options)
    executor = _executor(rt, engine, from_step, timeout, no_sandbox)
    started = asyncio.run(executor.start(rt, loaded, text, options, reuse))
    if reuse is not None and output is RunOutput.text:
        print(f"run {started.run_id}", flush=True)
        _announce(reuse)
    if detach:
        _detach(rt, executor, started, output, verbose, timeout)
    _execute(
        rt,
        executor,
        started,
        output,
        verbose=verbose,
        deadline=deadline,
        announced=bool(reuse),
        wait=wait,
    )


def _start_boxes(
    rt: Runtime, loaded: LoadedPipeline, options: RunOptions, engine: str | None
) -> None:
    """A sandboxed run this process executes (the local engine): its first visits' boxes
    start now, while it is checked and recorded (engine/visit/sandboxing.py)."""
    from swell.engine.visit.sandboxing import prestart
    from swell.runtime import plan_ahead
    from swell.sandbox.settings import settings_of

    runtime = rt.project.manifest.runtime
    if (engine or runtime.engine or "local") != "local" or options.no_sandbox:
        return
    if settings_of(runtime.sandbox) is not None:
        plan = plan_ahead(rt, loaded, options)
        prestart(plan, plan.pipeline.pipeline.steps)


def _check_sandbox(rt: Runtime, options: RunOptions) -> None:
    """A run whose sandbox cannot run here does not start (the error says how to fix
    it). `--no-sandbox` is warned about by the run's first events."""
    from swell.engine.visit.sandboxing import check

    check(rt.project.manifest.runtime.sandbox, options.no_sandbox)


def _executor(
    rt: Runtime, engine: str | None, from_step: str | None, timeout: str | None, no_sandbox: bool
) -> Executor:
    """`--engine`, else runtime.engine, else local; what it cannot do yet is refused."""
    from swell.executors import executor_named
    from swell.executors.base import ENGINES

    chosen = engine or rt.project.manifest.runtime.engine or "local"
    if chosen not in ENGINES:
        raise typer.BadParameter(
            f"unknown engine '{chosen}': {' or '.join(ENGINES)}", param_hint="--engine"
        )
    executor = executor_named(rt, chosen)
    for flag, given, can in (
        ("--from-step", from_step, executor.reruns),
        ("--timeout", timeout, executor.timeouts),
        # its workers sandbox every visit they run (docs/security.md)
        ("--no-sandbox", no_sandbox, executor.unsandboxed),
    ):
        if given and not can:
            raise typer.BadParameter(f"not available with the {chosen} engine yet", param_hint=flag)
    return executor


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
    rt: Runtime,
    executor: Executor,
    started: Started,
    output: RunOutput,
    verbose: bool,
    timeout: str | None,
) -> NoReturn:
    """Let the started run go on without this terminal, print its id, and exit."""
    from swell.cli.common import print_json

    extra = ["-o", "json" if output is RunOutput.json else "text"]
    extra += ["--verbose"] if verbose else []
    extra += ["--timeout", timeout] if timeout else []
    extra += ["--no-sandbox"] if started.plan and started.plan.options.no_sandbox else []
    extra += ["--wait"]  # no terminal there: a gate waits for `swell approve`
    detached = executor.detach(rt, started, extra)
    run_id = detached.run_id
    if output is RunOutput.json:
        print_json(detached.facts)
    elif output is RunOutput.quiet:
        print(run_id)
    else:
        for line in detached.lines:
            print(line)
        print(f"follow it: swell logs {run_id} --follow   status: swell status {run_id}")
    raise typer.Exit(0)


def resume(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    timeout: TimeoutOption = None,
    wait: WaitOption = False,
    no_sandbox: NoSandboxOption = False,
    output: RunOutputOption = RunOutput.text,
    verbose: VerboseOption = False,
) -> None:
    """Continue a run after a crash, Ctrl-C, or a gate decision."""
    from swell.executors import executor_for

    deadline = _deadline(timeout)
    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    executor = executor_for(run)
    if no_sandbox and not executor.unsandboxed:
        raise typer.BadParameter(
            f"not available with the {executor.name} engine yet", param_hint="--no-sandbox"
        )
    resumed = executor.resume(rt, run)
    if resumed.plan is not None:
        resumed.plan.options.no_sandbox = no_sandbox  # each process decides (a resume too)
        _check_sandbox(rt, resumed.plan.options)
    if output is not RunOutput.quiet:
        for note in resumed.notes:
            print(f"note: {note}", file=sys.stderr)
    _execute(rt, executor, resumed, output, verbose=verbose, deadline=deadline, wait=wait)
