"""`swell approve`, `swell reject`, `swell cancel`: decisions from another terminal."""

from __future__ import annotations

import getpass
import time
from typing import Annotated

import typer

from swell.cli.common import RunArgument, runtime


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
    from swell.runtime import is_alive

    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    gate = rt.store.decide_gate(run.id, step, "approved", choice=choice, by=_who())
    print(
        f"approved gate '{gate.step_id}' of run {run.id}"
        + (f" (choice {choice})" if choice else "")
    )
    if not is_alive(run.owner_pid):
        print(f"the run is not executing; continue it with: swell resume {run.id}")


def reject(
    ctx: typer.Context,
    run_id: RunArgument,
    step: Annotated[str | None, typer.Argument(metavar="[STEP]")] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why; shown in the run's events.")] = "",
) -> None:
    """Reject a waiting gate (the gate step fails with the reason)."""
    from swell.runtime import is_alive

    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    gate = rt.store.decide_gate(run.id, step, "rejected", reason=reason or None, by=_who())
    print(f"rejected gate '{gate.step_id}' of run {run.id}")
    if not is_alive(run.owner_pid):
        print(f"the run is not executing; continue it with: swell resume {run.id}")


def cancel(
    ctx: typer.Context,
    run_id: RunArgument,
) -> None:
    """Stop a run for good; running steps are killed."""
    from swell.errors import RunStateError
    from swell.runtime import FINAL, cancel_stored_run, is_alive

    rt = runtime(ctx)
    run = rt.store.get_run(run_id)
    if run.status in FINAL:
        raise RunStateError(f"run {run.id} already {run.status}")
    if is_alive(run.owner_pid) and run.status in ("running", "waiting", "pending"):
        rt.store.request_cancel(run.id)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if rt.store.get_run(run.id).status == "cancelled":
                print(f"cancelled run {run.id}")
                return
            time.sleep(0.2)
        print(f"cancel requested; process {run.owner_pid} has not stopped yet")
        raise typer.Exit(1)
    cancel_stored_run(rt, run)
    print(f"cancelled run {run.id}")
