"""The client side of the Temporal executor: record a run and start its workflow,
wait for it, and reach it for gate decisions and cancellation.

A run the engine executes says so in its stored options (`engine: temporal`, with the
server it was started on), so `swell approve`, `reject`, `cancel` and `resume` know
to ask the workflow instead of a local process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swell.errors import RunStateError, SwellError
from swell.executors.temporal import ADDRESS, NAMESPACE, QUEUE, WORKFLOW
from swell.executors.temporal.specs import GateRequest, RunOutcome, RunSpec

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowExecutionStatus
    from temporalio.converter import DataConverter

    from swell.engine.visit.context import RunOptions
    from swell.manifest.loader import LoadedPipeline
    from swell.manifest.models import TemporalConfig
    from swell.runtime import Runtime

ENGINE = "temporal"
STICKY_SECONDS = 5.0  # how long a visit waits for its run's worker before any may take it


@dataclass(frozen=True)
class Engine:
    """Which Temporal server, namespace and task queue a run lives on."""

    address: str
    namespace: str = NAMESPACE
    queue: str = QUEUE

    def options(self) -> dict[str, str]:
        return {
            "engine": ENGINE,
            "temporal_address": self.address,
            "temporal_namespace": self.namespace,
            "temporal_queue": self.queue,
        }


def configured(config: TemporalConfig | None = None, address: str | None = None) -> Engine:
    """The server to use: `address` (a flag), else $SWELL_TEMPORAL_ADDRESS, else
    `runtime.temporal.address`, else 127.0.0.1:7233; the queue likewise from
    $SWELL_TEMPORAL_QUEUE or `runtime.temporal.queue`."""
    env = os.environ
    return Engine(
        address=address
        or env.get("SWELL_TEMPORAL_ADDRESS")
        or (config.address if config else None)
        or ADDRESS,
        namespace=(config.namespace if config else None) or NAMESPACE,
        queue=env.get("SWELL_TEMPORAL_QUEUE") or (config.queue if config else None) or QUEUE,
    )


def engine_of(options: dict[str, Any]) -> Engine | None:
    """The engine a stored run was started on, or None for a run of this machine."""
    if options.get("engine") != ENGINE:
        return None
    return Engine(
        str(options.get("temporal_address") or ADDRESS),
        str(options.get("temporal_namespace") or NAMESPACE),
        str(options.get("temporal_queue") or QUEUE),
    )


def _sdk() -> None:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        raise SwellError(
            "the Temporal executor needs temporalio: pip install 'swell[temporal]'"
        ) from None


def data_converter() -> DataConverter:
    """How values cross the wire, for clients, workers and replayers alike: pydantic's
    converter, so the engine's own models (a visit's `StepResult`) travel as they are."""
    from temporalio.contrib.pydantic import pydantic_data_converter

    return pydantic_data_converter


async def connect(engine: Engine) -> Client:
    """A client of the engine's server; one clear error when it cannot be reached."""
    _sdk()
    from temporalio.client import Client

    try:
        return await Client.connect(
            engine.address, namespace=engine.namespace, data_converter=data_converter()
        )
    except Exception as exc:
        text = str(exc)
        reason = "connection refused" if "refused" in text.lower() else text[:200]
        raise SwellError(
            f"cannot reach the Temporal server at {engine.address} ({reason}); start one "
            "(`temporal server start-dev`) or set runtime.temporal.address / "
            "SWELL_TEMPORAL_ADDRESS"
        ) from None


def record_run(
    rt: Runtime, loaded: LoadedPipeline, input_text: str, options: RunOptions, engine: Engine
) -> RunSpec:
    """Record a new run for the engine to execute (no process of this machine claims
    it) and return what its workflow starts from."""
    from swell.runtime import new_run_id, stored_options
    from swell.workspace.owner import record_owner

    run_id = new_run_id(loaded.name)
    workspace = rt.state_dir / "workspaces" / run_id
    from swell.store.dispatch import record_run as record

    record(
        rt.store,
        options.dispatch_key,
        run_id=run_id,
        pipeline=loaded.name,
        input_text=input_text,
        workspace=str(workspace),
        pipeline_path=str(loaded.path),
        project_root=str(rt.project.root),
        options={**stored_options(options), **engine.options()},
        pipeline_text=loaded.text,
    )
    record_owner(workspace, rt.store.identity)  # `swell clean` removes it only from its store
    return run_spec(rt, loaded, run_id, input_text, options, str(workspace))


def run_spec(
    rt: Runtime,
    loaded: LoadedPipeline,
    run_id: str,
    input_text: str,
    options: RunOptions,
    workspace: str,
    state_dir: Path | None = None,
) -> RunSpec:
    """What a recorded run's workflow starts from (the project's runtime settings as
    they are now); `state_dir`: where its run directory goes (the parent's, for a child)."""
    from swell.engine.agent.persona_names import persona_variables, rendered_personas, templated
    from swell.engine.loop.cost import Budget
    from swell.engine.loop.decisions import Limits
    from swell.engine.loop.retry import retry_max_delay
    from swell.store.location import store_location

    runtime = rt.project.manifest.runtime
    location = store_location(rt.project.root, runtime.store)
    limits = Limits(
        concurrency=runtime.concurrency,
        breaker_limit=runtime.circuit_breaker.limit,
        max_step_visits=loaded.pipeline.max_step_visits,
        budget=Budget.of(runtime.cost),
        retry_max_delay=retry_max_delay(runtime.timeouts.retry_max_delay_seconds),
    )
    temporal = runtime.temporal
    personas: dict[str, str | None] = {}
    if any(templated(s.persona) for s in loaded.pipeline.steps):
        variables = persona_variables(
            rt.project, run_id=run_id, pipeline_name=loaded.name, env=options.env
        )
        personas = rendered_personas(loaded.pipeline, variables)
    return RunSpec(
        run_id=run_id,
        project_root=str(rt.project.root),
        store=str(location),
        pipeline_path=str(loaded.path),
        pipeline_text=loaded.text,
        input=input_text,
        workspace=workspace,
        run_dir=str((state_dir or rt.state_dir) / "runs" / run_id),
        limits=limits,
        options=options,
        local_visits=temporal.local_visits,
        continue_after=temporal.continue_after or RunSpec.continue_after,
        remote=os.environ.get("SWELL_WORKSPACE_REMOTE") or temporal.remote,
        sticky_seconds=STICKY_SECONDS
        if temporal.sticky_seconds is None
        else temporal.sticky_seconds,
        personas=personas,
    )


async def start(client: Client, engine: Engine, spec: RunSpec) -> None:
    """Start the run's workflow; its id is the run id."""
    await client.start_workflow(WORKFLOW, spec, id=spec.run_id, task_queue=engine.queue)


async def start_once(client: Client, engine: Engine, spec: RunSpec) -> bool:
    """Start the run's workflow unless the server has (or had) one for it: True when
    started here. A workflow id is never reused, so two processes handing the same
    recorded run on start one workflow between them."""
    from temporalio.common import WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    if await _status(client, spec.run_id) is not None:
        return False
    try:
        await client.start_workflow(
            WORKFLOW,
            spec,
            id=spec.run_id,
            task_queue=engine.queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
    except WorkflowAlreadyStartedError:
        return False
    return True


async def outcome(client: Client, run_id: str) -> RunOutcome:
    """Wait for the run's workflow to end."""
    from temporalio.client import WorkflowFailureError

    handle = client.get_workflow_handle(run_id, result_type=RunOutcome)
    try:
        result: RunOutcome = await handle.result()
    except WorkflowFailureError as exc:
        return RunOutcome(run_id, "failed", f"the run's workflow failed: {exc.cause or exc}")
    return result


async def decide(client: Client, run_id: str, request: GateRequest) -> str:
    """Deliver a gate decision to the run's workflow; returns the gate's step. The
    workflow answers at once when no gate fits (RunStateError)."""
    from temporalio.client import RPCError, WorkflowUpdateFailedError

    handle = client.get_workflow_handle(run_id)
    try:
        step: str = await handle.execute_update("decide_gate", request, result_type=str)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        message = getattr(cause, "message", None) or str(cause or exc)
        raise RunStateError(f"run {run_id}: {message}") from None
    except RPCError as exc:
        if "completed" in str(exc):
            raise RunStateError(f"run {run_id}: no gate is waiting (the run has ended)") from None
        raise RunStateError(f"run {run_id}: the engine does not execute it ({exc})") from None
    return step


async def running(client: Client, run_id: str) -> bool:
    """Whether the run's workflow still runs: False once it closed (ended, terminated)
    or when the server no longer knows it (a dev server started without a database
    forgets every workflow when it stops)."""
    from temporalio.client import WorkflowExecutionStatus

    return await _status(client, run_id) == WorkflowExecutionStatus.RUNNING


async def _status(client: Client, run_id: str) -> WorkflowExecutionStatus | None:
    """The run's workflow's status; None when the server does not know one."""
    from temporalio.client import RPCError, RPCStatusCode

    try:
        described = await client.get_workflow_handle(run_id).describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return None
        raise RunStateError(f"run {run_id}: the engine cannot say ({exc})") from None
    return described.status


async def cancel(client: Client, run_id: str) -> None:
    """Ask the run's workflow to cancel it; the workflow stops its visits' processes
    and records the run as cancelled."""
    from temporalio.client import RPCError

    try:
        await client.get_workflow_handle(run_id).cancel()
    except RPCError as exc:
        raise RunStateError(f"run {run_id}: the engine does not execute it ({exc})") from None
