"""`swell worker`: a process that runs the engine's workflows and visits from one task
queue until it is stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from swell import sweep
from swell.executors.temporal.client import Engine, connect

if TYPE_CHECKING:
    from temporalio.worker import WorkerTuner

    from swell.executors.temporal.slots import VisitSlots

# how often a running visit's heartbeat reaches the server at most: a cancelled run's
# visits hear of it within about this long
HEARTBEAT_THROTTLE = timedelta(seconds=1)
WORKFLOW_TASKS = 100  # the SDK's default for workflow tasks at once


def _warm() -> None:
    """Import every step kind now: the workflow's first task must not spend Temporal's
    deadlock-detection budget (2 s) on imports."""
    from swell.engine.steps.registry import BUILTIN
    from swell.executors.temporal.workflow import _kinds

    kinds = _kinds()
    for name in BUILTIN:
        kinds.get(name)


async def serve(engine: Engine, slots: int, ready: Callable[[], None] | None = None) -> None:
    """Poll `engine.queue` with `slots` visits at most at once, until SIGINT or SIGTERM;
    visits still running then are cancelled (their processes end) and run again on
    another worker."""
    from temporalio.worker import Worker

    from swell.executors.temporal.activities import Activities
    from swell.executors.temporal.workflow import RunWorkflow

    _warm()
    client = await connect(engine)
    acts = Activities()
    # this worker's own queue: a run's next visits come here first (its warm workspace)
    acts.context.own_queue = f"{engine.queue}.{socket.gethostname()}.{os.getpid()}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # visits' processes that daemonize are re-parented here, where the sweep finds them
    with sweep.adopting():
        worker = Worker(
            client,
            task_queue=engine.queue,
            workflows=[RunWorkflow],
            activities=[acts.record, acts.create_child, acts.gate_message, acts.visit],
            tuner=_tuner(acts.context.slots_for(engine.queue, slots), max(slots, 4)),
            max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
            default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
            graceful_shutdown_timeout=timedelta(seconds=5),
        )
        own = Worker(
            client,
            task_queue=acts.context.own_queue,
            activities=[acts.visit],
            tuner=_tuner(acts.context.slots_for(acts.context.own_queue, slots), 1),
            max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
            default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
            graceful_shutdown_timeout=timedelta(seconds=5),
        )
        async with worker, own:
            if ready is not None:
                ready()
            await stop.wait()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(sig)


def _tuner(visits: VisitSlots, local: int) -> WorkerTuner:
    """Workflow tasks as the SDK's default; visits by `VisitSlots` (a visit waiting
    for its child runs lends its slot); `local` local activities (events, gates)."""
    from temporalio.worker import FixedSizeSlotSupplier, WorkerTuner

    return WorkerTuner.create_composite(
        workflow_supplier=FixedSizeSlotSupplier(WORKFLOW_TASKS),
        activity_supplier=visits,
        local_activity_supplier=FixedSizeSlotSupplier(local),
        nexus_supplier=FixedSizeSlotSupplier(1),
    )
