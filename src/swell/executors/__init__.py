"""Who executes a run: the Executor seam the CLI and the dashboard use (base.py), the
in-process executor (local.py) and the Temporal one (temporal/). Callers pick one
here, by engine name or by the engine a stored run records; base.py knows neither."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swell.executors.base import Executor
    from swell.runtime import Runtime
    from swell.store.rows import RunRow


def executor_named(rt: Runtime, name: str) -> Executor:
    """The executor for a new run on engine `name` (local or temporal)."""
    if name == "temporal":
        from swell.executors.temporal.executor import TemporalExecutor, configured

        return TemporalExecutor(configured(rt.project.manifest.runtime.temporal))
    from swell.executors.local import LocalExecutor

    return LocalExecutor()


def executor_for(run: RunRow) -> Executor:
    """The executor of a stored run, by the engine recorded in its options; a run that
    ended for good is the store's alone (its engine no longer holds it)."""
    from swell.events.statuses import ENDED_FOR_GOOD

    if run.options.get("engine") == "temporal" and run.status not in ENDED_FOR_GOOD:
        from swell.executors.temporal.executor import TemporalExecutor, engine_of

        engine = engine_of(run.options)
        assert engine is not None
        return TemporalExecutor(engine)
    from swell.executors.local import LocalExecutor

    return LocalExecutor()


def start_held(rt: Runtime, run: RunRow) -> bool:
    """Set going a recorded run that its engine (Temporal) executes but whose starter
    died before handing it to the engine: True when started here, False when the
    engine has it already (or it is no such run)."""
    import asyncio

    from swell.executors.temporal.executor import TemporalExecutor

    executor = executor_for(run)
    if not isinstance(executor, TemporalExecutor) or run.status != "pending":
        return False
    return asyncio.run(executor.start_recorded(rt, run))


def held_by(run: RunRow) -> str | None:
    """`executor_for(run).held_by`: who executes `run` when no process claims it. A
    local run's answer needs no executor, so `swell list` and `swell status` import
    neither executor (nor asyncio) for it."""
    from swell.events.statuses import ENDED_FOR_GOOD

    if run.options.get("engine") == "temporal" and run.status not in ENDED_FOR_GOOD:
        return executor_for(run).held_by
    return None  # the local executor's: a process, which claims the run in the store
