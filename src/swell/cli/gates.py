"""`swell approve`, `swell reject`, `swell cancel`: decisions from another terminal."""

from __future__ import annotations

import getpass
import time
from typing import TYPE_CHECKING, Annotated

import typer

from swell.cli.common import RunArgument, runtime

if TYPE_CHECKING:
    from swell.runtime import Runtime


def _who() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "cli"


def approve(
    ctx: typer.Context,
    run_id: RunArgument,
    step: Annotated[
        str | None, typer.Argument(metavar="[STEP]", help="Gate step (needed if several wait).")
    ] = None,
    choice: Annotated[
        str | None, typer.Option("--choice", help="Choice key, for gates with choices.")
    ] = None,
) -> None:
    """Approve a waiting gate."""
    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    gate = rt.store.decide_gate(run.id, step, "approved", choice=choice, by=_who())
    print(
        f"approved gate '{gate.step_id}' of run {run.id}"
        + (f" (choice {choice})" if choice else "")
    )
    if rt.store.owner(run.id) is None:
        print(f"the run is not executing; continue it with: swell resume {run.id}")


def reject(
    ctx: typer.Context,
    run_id: RunArgument,
    step: Annotated[str | None, typer.Argument(metavar="[STEP]")] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why; shown in the run's events.")] = "",
) -> None:
    """Reject a waiting gate (the gate step fails with the reason)."""
    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    gate = rt.store.decide_gate(run.id, step, "rejected", reason=reason or None, by=_who())
    print(f"rejected gate '{gate.step_id}' of run {run.id}")
    if rt.store.owner(run.id) is None:
        print(f"the run is not executing; continue it with: swell resume {run.id}")


def cancel(
    ctx: typer.Context,
    run_id: RunArgument,
) -> None:
    """Stop a run and its sub-pipeline runs for good; running steps are killed."""
    from swell.errors import RunBusy, RunStateError
    from swell.runtime import FINAL, cancel_stored_run

    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    if run.status in FINAL:
        raise RunStateError(f"run {run.id} already {run.status}")
    if rt.store.owner(run.id) is None:
        try:
            for cancelled in cancel_stored_run(rt, run):
                print(f"cancelled run {cancelled}")
            return
        except RunBusy:
            pass  # a process took the run up meanwhile: ask it to stop
    _ask_to_stop(rt, run.id)


def _ask_to_stop(rt: Runtime, run_id: str) -> None:
    """Ask the process executing the run to cancel it, and wait until it has."""
    rt.store.request_cancel(run_id)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if rt.store.get_run(run_id).status == "cancelled":
            print(f"cancelled run {run_id}")
            return
        time.sleep(0.2)
    owner = rt.store.owner(run_id)
    who = f"process {owner.pid} on {owner.host}" if owner else "the process executing it"
    print(f"cancel requested; {who} has not stopped yet")
    raise typer.Exit(1)
