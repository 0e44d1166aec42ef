"""What the dashboard's buttons do: the same store calls and runtime functions as
`swell approve`, `swell reject` and `swell cancel` (cli/gates.py). A run the Temporal
engine executes is asked through its workflow, as the CLI asks it: its workers read
neither decisions nor cancel requests from the store."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from swell.errors import RunBusy, RunStateError
from swell.events.statuses import ENDED_FOR_GOOD
from swell.store.protocols import Store
from swell.web.models import ActionResult

if TYPE_CHECKING:
    from swell.executors.temporal.client import Engine
    from swell.runtime import Runtime
    from swell.store.rows import RunRow

FINAL = ENDED_FOR_GOOD


def _who() -> str:
    try:
        return f"{getpass.getuser()} (web)"
    except Exception:
        return "web"


def _engine(run: RunRow) -> Engine | None:
    """The engine executing the run, None for a run of this machine (or one that ended:
    the store answers for it)."""
    from swell.executors.temporal.client import engine_of

    return None if run.status in FINAL else engine_of(run.options)


async def decide(
    store: Store,
    run_id: str,
    step_id: str | None,
    decision: Literal["approved", "rejected"],
    *,
    choice: str | None = None,
    reason: str | None = None,
) -> ActionResult:
    """Record a decision on a waiting gate, as `swell approve`/`reject` do; the process
    executing the run picks it up, or its workflow takes it (RunStateError when no gate
    fits)."""
    run = store.get_run(run_id)
    word = "approved" if decision == "approved" else "rejected"
    engine = _engine(run)
    if engine is not None:
        from swell.executors.temporal import client as engines
        from swell.executors.temporal.specs import GateRequest

        request = GateRequest(decision, step_id, choice=choice, reason=reason, by=_who())
        step = await engines.decide(await engines.connect(engine), run.id, request)
        said = f" (choice {choice})" if choice else ""
        return ActionResult(ok=True, message=f"{word} gate '{step}' of run {run.id}{said}")
    gate = store.decide_gate(run.id, step_id, decision, choice=choice, reason=reason, by=_who())
    message = f"{word} gate '{gate.step_id}' of run {run.id}" + (
        f" (choice {choice})" if choice else ""
    )
    if store.owner(run.id) is None:
        message += f"; the run is not executing: continue it with `swell resume {run.id}`"
    return ActionResult(ok=True, message=message)


async def cancel(store: Store, root: Path, run_id: str) -> ActionResult:
    """`swell cancel RUN` without waiting: a run no process executes is closed as
    cancelled here (runtime.cancel_stored_run); otherwise its process (or the engine's
    workflow) is asked to stop (Store.request_cancel) and the page shows when it has."""
    run = store.get_run(run_id)
    if run.status in FINAL:
        raise RunStateError(f"run {run.id} already {run.status}")
    engine = _engine(run)
    if engine is not None:  # no process here holds it: never close it behind the workflow
        from swell.executors.temporal import client as engines

        await engines.cancel(await engines.connect(engine), run.id)
        return ActionResult(ok=True, message=f"cancel requested for run {run.id}")
    if store.owner(run.id) is None:
        from swell.runtime import cancel_stored_run  # the engine loads only for this

        try:
            done = cancel_stored_run(_runtime(store, root), run)
            return ActionResult(ok=True, message="cancelled run " + ", ".join(done))
        except RunBusy:
            pass  # a process took the run up meanwhile: ask it to stop
    store.request_cancel(run.id)
    return ActionResult(ok=True, message=f"cancel requested for run {run.id}")


def _runtime(store: Store, root: Path) -> Runtime:
    """A Runtime around the dashboard's store; cancelling reads nothing of the manifest
    (a broken wave.yaml must not keep a run from being cancelled)."""
    from swell.manifest.discovery import MANIFEST_NAMES
    from swell.manifest.loader import Project
    from swell.manifest.models import Manifest
    from swell.manifest.yamlsrc import SourceMap
    from swell.runtime import Runtime, open_registries
    from swell.store.location import state_dir_for

    path = root / MANIFEST_NAMES[0]
    project = Project(root, path, Manifest(kind="WaveManifest"), SourceMap(str(path)))
    return Runtime(project, store, open_registries(), state_dir_for(root))
