"""`swell approve`, `swell reject`, `swell cancel`: decisions from another terminal."""

from __future__ import annotations

import getpass
import time
from typing import TYPE_CHECKING, Annotated

import typer

from swell.cli.common import RunPrefixArgument, project_store, store_runtime
from swell.cli.pick import OptionalRunArgument

if TYPE_CHECKING:
    from swell.runtime import Runtime
    from swell.store.protocols import RunReader
    from swell.store.rows import RunRow


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
    store = project_store(ctx)  # the store alone: a broken wave.yaml does not lock you out
    run = store.get_run(run_id)
    if _on_engine(run, step, "approved", choice=choice, reason=text or None):
        return
    gate = store.decide_gate(
        run.id, step, "approved", choice=choice, reason=text or None, by=_who()
    )
    print(
        f"approved gate '{gate.step_id}' of run {run.id}"
        + (f" (choice {choice})" if choice else "")
    )
    _continue_hint(store, run)


def _continue_hint(store: RunReader, run: RunRow) -> None:
    """Which run to resume when none is executing: the top one (a sub-pipeline run
    goes on with its parent)."""
    top = run
    while top.parent_run_id:
        top = store.get_run(top.parent_run_id)
    if store.owner(run.id) is None and store.owner(top.id) is None:
        print(f"the run is not executing; continue it with: swell resume {top.id}")


def reject(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    step: Annotated[
        str | None, typer.Argument(metavar="[STEP]", help="Gate step (needed if several wait).")
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="Why; shown in the run's events.")] = "",
) -> None:
    """Reject a waiting gate (the gate step fails with the reason)."""
    store = project_store(ctx)
    run = store.get_run(run_id)
    if _on_engine(run, step, "rejected", choice=None, reason=reason or None):
        return
    gate = store.decide_gate(run.id, step, "rejected", reason=reason or None, by=_who())
    print(f"rejected gate '{gate.step_id}' of run {run.id}")
    _continue_hint(store, run)


def _on_engine(run: RunRow, step: str | None, decision: str, **given: str | None) -> bool:
    """Deliver the decision to the run's workflow when the Temporal engine executes it."""
    from swell.cli.worker import decide_on_engine, engine_of
    from swell.events.statuses import ENDED_FOR_GOOD

    engine = engine_of(run)
    if engine is None or run.status in ENDED_FOR_GOOD:  # an ended run: the store answers
        return False
    gate = decide_on_engine(run, engine, step, decision=decision, by=_who(), **given)
    choice = given.get("choice")
    print(f"{decision} gate '{gate}' of run {run.id}" + (f" (choice {choice})" if choice else ""))
    return True


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
    from swell.errors import RunBusy, RunStateError
    from swell.runtime import FINAL, cancel_stored_run

    rt = store_runtime(ctx)
    run = run_or_newest(rt.store, run_id)
    if run.status in FINAL:
        raise RunStateError(f"run {run.id} already {run.status}")
    from swell.cli.worker import cancel_on_engine, engine_of

    engine = engine_of(run)
    if engine is not None:  # the Temporal engine executes it: cancel its workflow
        cancel_on_engine(rt.store, run, engine)
        return
    if rt.store.owner(run.id) is None:
        try:
            for cancelled in cancel_stored_run(rt, run):
                print(f"cancelled run {cancelled}")
            return
        except RunBusy:
            pass  # a process took the run up meanwhile: ask it to stop
    if force:
        default = (rt.project.manifest.runtime.timeouts.process_grace_seconds or 3.0) + 2.0
        _force_stop(rt, run.id, default if grace is None else grace)
        return
    _ask_to_stop(rt, run.id)


def _force_stop(rt: Runtime, run_id: str, grace: float) -> None:
    """Ask for `grace` seconds; then kill the executing process group if it still holds
    the run, end what its steps left running, and close the run as cancelled."""
    from swell.ops.stop import kill_owner
    from swell.runtime import FINAL

    rt.store.request_cancel(run_id)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if rt.store.owner(run_id) is None and rt.store.get_run(run_id).status in FINAL:
            break
        time.sleep(0.2)
    for line in kill_owner(rt, run_id):
        print(line)


def _wait_cancelled(rt: Runtime, run_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        if rt.store.get_run(run_id).status == "cancelled":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def _ask_to_stop(rt: Runtime, run_id: str) -> None:
    """Ask the process executing the run to cancel it, and wait until it has."""
    rt.store.request_cancel(run_id)
    if _wait_cancelled(rt, run_id, 15):
        print(f"cancelled run {run_id}")
        return
    owner = rt.store.owner(run_id)
    who = f"process {owner.pid} on {owner.host}" if owner else "the process executing it"
    print(f"cancel requested; {who} has not stopped yet (`swell cancel {run_id} --force` kills it)")
    raise typer.Exit(1)
