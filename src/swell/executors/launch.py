"""Starting and resuming runs for the server (`POST /api/runs`, `.../resume`, the forms).

The request only checks and records: the pipeline is loaded and linted, the input and
overrides are checked as `swell run` checks them (ops/preflight.py), and the run is
recorded by its executor (executors/base.py). What executes it is never the request:

- local: a `swell resume RUN --wait` process of its own session (ops/background.py,
  what `swell run --detach` starts), supervised by the server: a thread waits for it
  and logs how it ended. When the server stops, these processes go on (they hold
  their runs in the store, as a detached run does); a later server, `swell status`
  and `swell approve` reach them as any run (docs/service.md).
- temporal: the run's workflow, on the engine's workers.

The server calls these in a worker thread (`anyio.to_thread`): loading and linting
must not hold up its event loop. A new local run is answered once it is recorded (with
a dispatch key, source `api`, in the same transaction) and handed on in the background
(`hand_on_later`): waiting for its process to start took seconds on a loaded machine.
A run recorded and not handed on (the server killed in between) is pending and
claimed by nobody; `swell serve` hands such runs on when it starts (web/hooks.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from swell.errors import RunBusy, SwellError
from swell.store.capabilities import claims

if TYPE_CHECKING:
    from swell.runtime import Runtime

log = logging.getLogger("swell.executors.launch")

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# `input.schema.type` values whose input must be JSON of that kind
JSON_KINDS: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
DETACHED_ARGS = ["-o", "text", "--wait"]  # no terminal there: a gate waits for a decision
API_SOURCE = "api"  # the dispatch key's source of runs started by POST /api/runs


class StartRun(BaseModel):
    """`POST /api/runs`: what `swell run PIPELINE` takes."""

    pipeline: str = Field(description="a pipeline of the project, by name")
    input: str | dict[str, Any] | list[Any] | None = Field(
        default=None, description="the run's input; JSON values are passed as their JSON text"
    )
    adapter: str | None = Field(default=None, description="adapter for every prompt step")
    model: str | None = Field(default=None, description="model for every prompt step")
    engine: str | None = Field(
        default=None, description="local or temporal (default: runtime.engine, else local)"
    )
    auto_approve: bool = Field(default=False, description="every gate takes its default choice")
    from_step: str | None = Field(
        default=None, description="start at this step, reusing what a previous run left before it"
    )
    from_run: str | None = Field(default=None, description="with from_step: the run to reuse")


class ForkRun(BaseModel):
    """`POST /api/runs/{id}/fork`: what `swell fork RUN --at STEP#VISIT` takes."""

    at: str = Field(description="the visit to fork at, STEP#VISIT", examples=["work#3"])
    input: str | dict[str, Any] | list[Any] | None = Field(
        default=None, description="the fork's input (default: the origin's)"
    )
    context: dict[str, str] = Field(
        default_factory=dict,
        description="context values from the fork on, as `--set context.KEY=VALUE`",
    )


class RewindRun(BaseModel):
    """`POST /api/runs/{id}/rewind`: what `swell rewind RUN --to STEP#VISIT` takes."""

    to: str = Field(description="the visit to go on from, STEP#VISIT", examples=["work#3"])


class RunStarted(BaseModel):
    run_id: str
    engine: str
    pid: int | None = None  # resumed local runs: the process executing it (new ones: later)
    notes: list[str] = Field(default_factory=list)


class BadStart(SwellError):
    """A start the request itself makes impossible (answered 400, nothing recorded)."""


@dataclass
class Supervisor:
    """The run processes this server started: one thread each waits for its end."""

    running: dict[int, str] = field(default_factory=dict)  # pid -> run id
    ended: dict[str, int] = field(default_factory=dict)  # run id -> exit status
    lock: threading.Lock = field(default_factory=threading.Lock)

    def watch(self, pid: int, run_id: str) -> None:
        with self.lock:
            self.running[pid] = run_id
        threading.Thread(target=self._reap, args=(pid, run_id), daemon=True).start()

    def _reap(self, pid: int, run_id: str) -> None:
        try:
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:  # reaped while it was being handed the run
            code = -1
        with self.lock:
            self.running.pop(pid, None)
            self.ended[run_id] = code
        if code not in (0, -1):
            log.warning("run %s: its process (pid %d) exited with status %d", run_id, pid, code)


def supervisor(extra: dict[str, Any]) -> Supervisor:
    found = extra.get("supervisor")
    if not isinstance(found, Supervisor):
        found = extra["supervisor"] = Supervisor()
    return found


def input_text(given: str | dict[str, Any] | list[Any] | None) -> str | None:
    if given is None or isinstance(given, str):
        return given
    return json.dumps(given)


def input_problem(schema_type: str | None, text: str) -> str | None:
    """Why `text` is not an input of `input.schema.type` (a JSON kind), or None."""
    kinds = JSON_KINDS.get((schema_type or "").lower())
    if kinds is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return f"the input must be JSON ({schema_type}, the pipeline's input.schema.type)"
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        return f"the input must be a JSON {schema_type} (the pipeline's input.schema.type)"
    return None


def start(root: Path, body: StartRun, sup: Supervisor) -> RunStarted:
    """Check, record and set going the run `body` asks for (in a worker thread)."""
    from swell.engine.visit.context import RunOptions
    from swell.executors import executor_named
    from swell.executors.base import ENGINES
    from swell.ops import preflight
    from swell.runtime import check_pipeline, open_runtime

    if not NAME.fullmatch(body.pipeline):
        raise BadStart(f"'{body.pipeline}' is not a pipeline name")
    rt = open_runtime(root)
    try:
        loaded, _ = check_pipeline(rt, body.pipeline)
        chosen = body.engine or rt.project.manifest.runtime.engine or "local"
        if chosen not in ENGINES:
            raise BadStart(f"unknown engine '{chosen}': {' or '.join(ENGINES)}")
        executor = executor_named(rt, chosen)
        reuse = None
        if body.from_step is not None:
            if not executor.reruns:
                raise BadStart(f"from_step is not available with the {chosen} engine yet")
            from swell.ops.rerun import plan_reuse, previous_run

            previous = previous_run(rt.store, loaded.name, body.from_run)
            reuse = plan_reuse(rt.store, loaded, body.from_step, previous)
        given = input_text(body.input)
        text = given if given is not None else (reuse.previous.input if reuse else "")
        schema = loaded.pipeline.input.schema_
        problem = input_problem(schema.type if schema else None, text) if text else None
        if problem:
            raise BadStart(problem)
        findings = preflight.check_run(
            rt.project,
            rt.registries,
            loaded,
            input_text=text,
            adapter=body.adapter,
            model=body.model,
        )
        preflight.raise_findings(loaded.name, findings)
        key = (API_SOURCE, uuid.uuid4().hex, loaded.name)  # found by `swell serve` if orphaned
        options = RunOptions(
            auto_approve=body.auto_approve, adapter=body.adapter, model=body.model, dispatch_key=key
        )
        from swell.engine.visit.sandboxing import check

        check(rt.project.manifest.runtime.sandbox, options.no_sandbox)
        started = asyncio.run(executor.start(rt, loaded, text, options, reuse))
        notes = list(reuse.notes) if reuse else []
        if started.plan is None:  # the engine executes it
            return RunStarted(run_id=started.run_id, engine=chosen, notes=notes)
        claims(rt.store).release(started.run_id)  # recorded: its process takes it from here
        hand_on_later(root, started.run_id, sup)
        return RunStarted(run_id=started.run_id, engine=chosen, notes=notes)
    finally:
        rt.store.close()


def hand_on_later(root: Path, run_id: str, sup: Supervisor) -> None:
    """Hand a recorded local run to a process of its own, from a thread of its own."""
    threading.Thread(
        target=hand_on, args=(root, run_id, sup), name=f"hand on {run_id}", daemon=True
    ).start()


def hand_on(root: Path, run_id: str, sup: Supervisor) -> bool:
    """Let a recorded run that no process executes go on in a `swell resume` process the
    server supervises. False (logged) when it cannot; nothing when its engine or
    another process has it already. A server stopped meanwhile leaves it pending, for
    the next one to hand on."""
    from swell.runtime import open_runtime

    try:
        rt = open_runtime(root)
    except SwellError as exc:
        log.warning("run %s: recorded, not handed on: %s", run_id, exc)
        return False
    try:
        return _hand_on(rt, run_id, sup)
    finally:
        rt.store.close()


def _hand_on(rt: Runtime, run_id: str, sup: Supervisor) -> bool:
    from swell.executors import executor_for

    try:
        run = rt.store.get_run(run_id)
        executor = executor_for(run)
        if executor.held_by is not None:  # its engine executes it, once started
            from swell.executors import start_held

            start_held(rt, run)
            return True
        resumed = executor.resume(rt, run)
        detached = executor.detach(rt, resumed, DETACHED_ARGS)
        sup.watch(_pid(detached.facts), run_id)
        return True
    except RunBusy:
        return True  # another process claimed it: it executes it
    except SwellError as exc:
        log.warning(
            "run %s: recorded, not handed on: %s (`swell resume %s` continues it)",
            run_id,
            exc,
            run_id,
        )
        return False
    finally:  # handed on, taken by another, or not to be: asked again, it would fail again
        forget_resume(rt.state_dir, run_id)


def resume(root: Path, run_id: str, sup: Supervisor) -> RunStarted:
    """Check that a stopped run can continue, as `swell resume` would (RunStateError,
    RunBusy: it cannot), record the request and hand the run on in the background
    (local: a process of its own). Answered before that process starts; a server
    stopped meanwhile leaves the request recorded, for the next one (`resumes`)."""
    return _go_on(root, sup, lambda rt: run_id)


def _go_on(root: Path, sup: Supervisor, run_of: Callable[[Runtime], str]) -> RunStarted:
    """Check that the run `run_of` names (or makes) can continue and record the request
    to (`resumes`); once the store is closed, hand it on."""
    from swell.executors import executor_for
    from swell.runtime import open_runtime

    rt = open_runtime(root)
    try:
        run = rt.store.get_run(run_of(rt))
        executor = executor_for(run)
        resumed = executor.resume(rt, run)  # the Temporal engine says it goes on by itself
        claims(rt.store).release(run.id)  # checked: the process handed it takes it from here
        record_resume(rt.state_dir, run.id)
    finally:
        rt.store.close()
    hand_on_later(root, run.id, sup)
    return RunStarted(run_id=run.id, engine=executor.name, notes=resumed.notes)


def fork(root: Path, run_id: str, body: ForkRun, sup: Supervisor) -> RunStarted:
    """Record the fork `body` asks for (as `swell fork` does: the origin's events up to
    the visit copied, its workspace restored) and continue it in a process of its own."""
    from swell.ops.checkpoints import parse_at
    from swell.travel import Fork, fork_run

    at = parse_at(body.at)
    for key in body.context:
        if not key or "=" in key or key != key.strip():
            raise BadStart(f"context key {key!r}: give KEY=VALUE with a name before the '='")
    change = Fork(input=input_text(body.input), sets=dict(body.context))
    return _go_on(root, sup, lambda rt: fork_run(rt, run_id, at, change))


def rewind(root: Path, run_id: str, body: RewindRun, sup: Supervisor) -> RunStarted:
    """Rewind the run to `body.to` (as `swell rewind` does) and continue it in a
    process of its own."""
    from swell.ops.checkpoints import parse_at
    from swell.travel import rewind_run

    at = parse_at(body.to)
    return _go_on(root, sup, lambda rt: rewind_run(rt, run_id, at))


RESUMES = "resume-requests"  # in the state directory: one empty file per run


def record_resume(state_dir: Path, run_id: str) -> None:
    """Keep the request to resume `run_id` until it is handed on (synced to disk: the
    answer says it is recorded)."""
    folder = state_dir / RESUMES
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / run_id, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def resumes(state_dir: Path) -> list[str]:
    """Runs whose resume was recorded and not handed on yet, oldest first."""
    folder = state_dir / RESUMES
    if not folder.is_dir():
        return []
    found = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime)
    return [p.name for p in found if NAME.fullmatch(p.name)]


def forget_resume(state_dir: Path, run_id: str) -> None:
    with contextlib.suppress(OSError):
        (state_dir / RESUMES / run_id).unlink()


def _pid(facts: dict[str, object]) -> int:
    pid = facts.get("pid")
    assert isinstance(pid, int)
    return pid


__all__ = [
    "BadStart",
    "ForkRun",
    "RewindRun",
    "RunStarted",
    "StartRun",
    "Supervisor",
    "forget_resume",
    "fork",
    "hand_on",
    "hand_on_later",
    "record_resume",
    "resume",
    "resumes",
    "rewind",
    "start",
    "supervisor",
]
