"""`swell approve`, `swell reject`, `swell cancel`: decisions from another terminal."""

from __future__ import annotations

import asyncio
import getpass
from typing import Annotated

import typer

from swell.cli.common import RunPrefixArgument, project_store, store_runtime
from swell.cli.pick import OptionalRunArgument
from swell.executors.base import Decision


def _who() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "cli"


def approve(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    step: Annotated[
        str | None, typer.Argument(metavar="[STEP]", help="Gate step (needed if several wait).")
    ] = None,
    choice: Annotated[
        str | None, typer.Option("--choice", help="Choice key, for gates with choices.")
    ] = None,
    text: Annotated[
        str, typer.Option("--text", help="A note with the decision: `{{ gate.STEP.text }}`.")
    ] = "",
) -> None:
    """Approve a waiting gate."""
    _decide(ctx, run_id, Decision("approved", step, choice, text or None, _who()))


def reject(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    step: Annotated[
        str | None, typer.Argument(metavar="[STEP]", help="Gate step (needed if several wait).")
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why; shown in the run's events.")] = "",
) -> None:
    """Reject a waiting gate (the gate step fails with the reason)."""
    _decide(ctx, run_id, Decision("rejected", step, None, reason or None, _who()))


def _decide(ctx: typer.Context, run_id: str, decision: Decision) -> None:
    """Deliver the decision to whoever executes the run, and say what happened."""
    from swell.executors import executor_for

    store = project_store(ctx)  # the store alone: a broken wave.yaml does not lock you out
    run = store.get_run(run_id)
    decided = asyncio.run(executor_for(run).decide_gate(store, run, decision))
    choice = f" (choice {decision.choice})" if decision.choice else ""
    print(f"{decision.decision} gate '{decided.step_id}' of run {run.id}{choice}")
    if decided.resume is not None:
        print(f"the run is not executing; continue it with: swell resume {decided.resume}")


def cancel(
    ctx: typer.Context,
    run_id: OptionalRunArgument = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            "-f",
            help="If the process executing the run has not stopped within the grace, kill "
            "its process group (SIGTERM, then SIGKILL) and the steps it left running.",
        ),
    ] = False,
    grace: Annotated[
        float | None,
        typer.Option(
            "--grace",
            metavar="SECONDS",
            min=0,
            max=86_400,  # a day: past that a clock or timer may not count (1e400 is inf)
            help="How long --force waits first (default: runtime.timeouts."
            "process_grace_seconds + 2, i.e. 5).",
        ),
    ] = None,
) -> None:
    """Stop a run (default: the newest) and its sub-pipeline runs for good; running
    steps are killed."""
    from swell.cli.pick import run_or_newest
    from swell.errors import RunStateError
    from swell.executors import executor_for
    from swell.runtime import FINAL

    rt = store_runtime(ctx)
    run = run_or_newest(rt.store, run_id)
    if run.status in FINAL:
        raise RunStateError(f"run {run.id} already {run.status}")
    if force:
        default = (rt.project.manifest.runtime.timeouts.process_grace_seconds or 3.0) + 2.0
        grace = default if grace is None else grace
    executor = executor_for(run)
    done = asyncio.run(executor.cancel(rt, run, wait=True, force=grace if force else None))
    for line in [*(f"cancelled run {r}" for r in done.ended), *done.killed]:
        print(line)
    if done.status is not None:
        print(f"{done.status} run {run.id}")
    if done.waiting_on is not None:
        print(f"cancel requested; {done.waiting_on}")
        raise typer.Exit(1)
