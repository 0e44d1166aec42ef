"""What the dashboard's buttons do: what `swell approve`, `swell reject` and `swell
cancel` do (cli/gates.py), through the run's executor (executors/base.py), so a run
the Temporal engine executes is asked through its workflow, a local one through the
store; the dashboard never asks which."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from swell.errors import RunStateError
from swell.events.statuses import ENDED_FOR_GOOD
from swell.executors import executor_for
from swell.executors.base import Decision
from swell.store.protocols import Store
from swell.web.models import ActionResult

if TYPE_CHECKING:
    from swell.runtime import Runtime

FINAL = ENDED_FOR_GOOD


def _who() -> str:
    try:
        return f"{getpass.getuser()} (web)"
    except Exception:
        return "web"


async def decide(
    store: Store,
    run_id: str,
    step_id: str | None,
    decision: Literal["approved", "rejected"],
    *,
    choice: str | None = None,
    reason: str | None = None,
) -> ActionResult:
    """Deliver a decision on a waiting gate, as `swell approve`/`reject` do
    (RunStateError when no gate fits)."""
    run = store.get_run(run_id)
    given = Decision(decision, step_id, choice, reason, _who())
    decided = await executor_for(run).decide_gate(store, run, given)
    said = f" (choice {choice})" if choice else ""
    message = f"{decision} gate '{decided.step_id}' of run {run.id}{said}"
    if decided.resume is not None:
        message += f"; the run is not executing: continue it with `swell resume {decided.resume}`"
    return ActionResult(ok=True, message=message)


async def cancel(store: Store, root: Path, run_id: str) -> ActionResult:
    """`swell cancel RUN` without waiting: a run nothing executes is closed as
    cancelled at once; otherwise whoever executes it is asked to stop, and the page
    shows when it has."""
    run = store.get_run(run_id)
    if run.status in FINAL:
        raise RunStateError(f"run {run.id} already {run.status}")
    done = await executor_for(run).cancel(_runtime(store, root), run)
    if done.ended:
        return ActionResult(ok=True, message="cancelled run " + ", ".join(done.ended))
    return ActionResult(ok=True, message=f"cancel requested for run {run.id}")


def _runtime(store: Store, root: Path) -> Runtime:
    """A Runtime around the dashboard's store; cancelling reads nothing of the manifest
    (a broken wave.yaml must not keep a run from being cancelled)."""
    from swell.manifest.discovery import MANIFEST_NAMES
    from swell.manifest.loader import Project
    from swell.manifest.models import Manifest
    from swell.manifest.yamldoc import SourceMap
    from swell.runtime import Runtime, open_registries
    from swell.store.location import state_dir_for

    path = root / MANIFEST_NAMES[0]
    project = Project(root, path, Manifest(kind="WaveManifest"), SourceMap(str(path)))
    return Runtime(project, store, open_registries(), state_dir_for(root))
