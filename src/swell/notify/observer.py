"""The hooks' observer: an event sink that hands each notification to a thread of its
hook (one per hook, so a slow or unreachable receiver delays only its own later
notifications, in order), and records how each delivery ended.

`emit` only queues: the run never waits for a hook. When the process ends, the
notifications still queued get up to `SWELL_HOOK_GRACE` seconds (2) to go out; what
is left then is written to `.swell/hooks-outbox/` and handed to a process of its own
(notify/drain.py), which goes on trying while the command returns. The run's own
outcome is stored before any of this.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swell.events import models as ev
from swell.manifest.wave_models import LifecycleHook
from swell.notify import limits
from swell.notify.deliver import Outcome, deliver
from swell.notify.events import fired, payload

if TYPE_CHECKING:
    from swell.events.bus import EventSink
    from swell.manifest.loader import LoadedPipeline
    from swell.store.protocols import RunReader

LOG_NAME = "hooks.log"  # in the state directory: one JSON line per delivery
GRACE = 2.0
OUTBOX = "hooks-outbox"  # in the state directory: what a process left to drain.py
RUNS = ("command", "http", "script")  # llm_judge hooks are not run (a load warning says so)


IDLE = 5.0  # seconds a hook's thread waits for more before it ends (a worker lives long)
_observers: weakref.WeakSet[HookObserver] = weakref.WeakSet()


# what a backed-up hook may leave out (a later notification says how many): never a
# run's start or end, nor a gate waiting
COALESCED = ("step_start", "step_completed")


class _Lane:
    """One hook's queue, and the thread that delivers it while there is work. When more
    than `limits.backlog()` notifications wait, the oldest step start or completion
    waiting is left out; the next one delivered says how many were (`coalesced`)."""

    def __init__(self, observer: HookObserver, hook: LifecycleHook) -> None:
        self.observer, self.hook = observer, hook
        self.waiting: deque[dict[str, Any]] = deque()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.ready = threading.Condition(self.lock)
        self.current: dict[str, Any] | None = None  # being delivered now
        self.tried = [0]  # its tries so far
        self.left_out = 0  # coalesced since the last one delivered

    def leftover(self) -> list[tuple[dict[str, Any], int]]:
        """What this hook has not delivered yet, with the tries made (current first)."""
        with self.lock:
            queued = [(body, 0) for body in self.waiting]
            if self.current is None:
                return queued
            return [(self.current, self.tried[0]), *queued]

    def put(self, body: dict[str, Any]) -> None:
        self.observer.pending_add(1)
        with self.lock:
            self.waiting.append(body)
            if len(self.waiting) > limits.backlog():
                self._coalesce()
            self.ready.notify()
            if self.thread is None:
                name = f"swell-hook-{self.hook.name}"
                self.thread = threading.Thread(target=self._work, name=name, daemon=True)
                self.thread.start()

    def _coalesce(self) -> None:
        """Leave out the oldest step notification waiting (the lock held)."""
        for i, body in enumerate(self.waiting):
            if body["type"] in COALESCED:
                del self.waiting[i]
                self.left_out += 1
                self.observer.pending_add(-1)
                return

    def _next(self) -> dict[str, Any] | None:
        """The next notification (with how many were left out before it); None when
        nothing came for IDLE seconds (the thread ends)."""
        with self.lock:
            while not self.waiting:
                if not self.ready.wait(IDLE) and not self.waiting:
                    self.thread = None
                    return None
            body = self.waiting.popleft()
            if self.left_out:
                body, self.left_out = {**body, "coalesced": self.left_out}, 0
            self.current, self.tried = body, [0]
            return body

    def _work(self) -> None:
        while (body := self._next()) is not None:
            try:
                outcome = deliver(self.hook, body, self.observer.root, self.tried)
            except Exception as exc:  # a hook must never take the run's process down
                outcome = Outcome(False, 1, f"{exc.__class__.__name__}: {exc}")
            with self.lock:
                self.current = None
            if self.observer.handed_over:
                return  # drain.py has it now (it may send it once more: at least once)
            self.observer.record(self.hook, body, outcome)
            self.observer.pending_add(-1)


class HookObserver:
    """Sends the run's events to its hooks (the manifest's, then the pipeline's). A
    gate waiting in one of its sub-pipeline runs goes to `gate_lanes` of them: all
    (no sub-pipeline has hooks of its own), or the pipeline's alone (`HookTree`: the
    sub-pipeline run's own observer sends the manifest's)."""

    def __init__(
        self,
        hooks: Sequence[LifecycleHook],
        *,
        run_id: str,
        pipeline: str,
        workspace: str,
        root: Path,
        log: Path,
        others_from: int = 0,
    ) -> None:
        self.run_id, self.pipeline, self.workspace = run_id, pipeline, workspace
        self.root, self.log = root, log
        self.lanes = [(h, _matcher(h), _Lane(self, h)) for h in hooks if h.type in RUNS]
        # the lanes that hear another run's gate: hooks from index `others_from` on
        kept = [h for h in hooks[others_from:] if h.type in RUNS]
        self.gate_lanes = [lane for lane in self.lanes if any(lane[0] is h for h in kept)]
        self.pending = 0
        self.idle = threading.Condition()
        self.write = threading.Lock()
        self.handed_over = False
        _observers.add(self)

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        for name, event in fired(events):
            # a sub-pipeline run's events are its own, but for a gate waiting in it
            lanes = self.lanes
            if event.run_id != self.run_id:
                if name != "gate_waiting":
                    continue
                lanes = self.gate_lanes
            body = payload(name, event, self.pipeline, self.workspace)
            for hook, matcher, lane in lanes:
                if hook.event != name:
                    continue
                if event.step_id and matcher is not None and not matcher.search(event.step_id):
                    continue
                lane.put(body)

    def pending_add(self, n: int) -> None:
        with self.idle:
            self.pending += n
            if self.pending == 0:
                self.idle.notify_all()

    def flush(self, seconds: float | None = None) -> bool:
        """Wait until every queued notification went out or gave up (at most
        `seconds`, SWELL_HOOK_GRACE by default); whether all did."""
        limit = _grace() if seconds is None else seconds
        deadline = time.monotonic() + limit
        with self.idle:
            while self.pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.idle.wait(left)
        return True

    def record(self, hook: LifecycleHook, body: dict[str, Any], outcome: Outcome) -> None:
        line = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "run_id": body["run_id"],
            "hook": hook.name,
            "event": body["type"],
            "step_id": body["step_id"],
            "ok": outcome.ok,
            "attempts": outcome.attempts,
            "error": outcome.error,
        }
        if body.get("coalesced"):
            line["coalesced"] = body["coalesced"]  # left out before this one
        with self.write:
            try:
                self.log.parent.mkdir(parents=True, exist_ok=True)
                with self.log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(line) + "\n")
            except OSError:
                pass  # the warning below still says it
        if not outcome.ok:
            print(
                f"warning: hook '{hook.name}' ({body['type']} of run {body['run_id']}) "
                f"failed after {outcome.attempts} tries: {outcome.error}",
                file=sys.stderr,
                flush=True,
            )

    def hand_over(self) -> int:
        """Write what is not delivered yet to the outbox and start drain.py on it;
        how many notifications it took."""
        items = [
            {"hook": lane.hook.model_dump(exclude_none=True), "body": body, "tried": tried}
            for _, _, lane in self.lanes
            for body, tried in lane.leftover()
        ]
        if not items:
            return 0
        self.handed_over = True
        outbox = self.log.parent / OUTBOX
        outbox.mkdir(parents=True, exist_ok=True)
        spool = outbox / f"{self.run_id}-{os.getpid()}-{time.monotonic_ns()}.json"
        spool.write_text(
            json.dumps({"root": str(self.root), "log": str(self.log), "items": items}),
            encoding="utf-8",
        )
        subprocess.Popen(
            [sys.executable, "-m", "swell.notify.drain", str(spool)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return len(items)


@atexit.register
def _flush_all() -> None:
    """At the process's end: the queued notifications of every run get the grace,
    and what is left goes to drain.py."""
    deadline = time.monotonic() + _grace()
    for observer in list(_observers):
        if observer.flush(max(0.0, deadline - time.monotonic())):
            continue
        try:
            left = observer.hand_over()
        except OSError as exc:
            print(
                f"warning: hook notifications of run {observer.run_id} lost: {exc}", file=sys.stderr
            )
            continue
        if left:
            print(
                f"note: {left} hook notification(s) of run {observer.run_id} still going "
                f"out in the background (see {observer.log})",
                file=sys.stderr,
                flush=True,
            )


def _matcher(hook: LifecycleHook) -> re.Pattern[str] | None:
    if not hook.matcher:
        return None
    try:
        return re.compile(hook.matcher)
    except re.error:
        return re.compile(r"(?!)")  # matches no step (the load warning names it)


def _grace() -> float:
    try:
        return max(0.0, float(os.environ.get("SWELL_HOOK_GRACE", GRACE)))
    except ValueError:
        return GRACE


@dataclass(frozen=True)
class KnownRun:
    """What the hooks of a sub-pipeline run are found from."""

    loaded: LoadedPipeline
    workspace: str
    parent_run_id: str | None = None
    parent_step_id: str | None = None


RunLookup = Callable[[str], "KnownRun | None"]  # None: no such run, or no pipeline kept


class HookTree:
    """A run's hooks and those of its sub-pipeline runs, as Wave fires them. A
    sub-pipeline run has an executor of its own whose hooks are the manifest's and its
    own pipeline's (internal/pipeline/executor_composition.go, executor_lifecycle.go),
    hearing its own run's events; a `strategy: matrix` child pipeline's executor shares
    its parent's hooks instead (NewChildExecutor, matrix.go). Each sub-pipeline run's
    observer is made when its first event comes, from what `lookup` finds for it."""

    def __init__(
        self,
        manifest_hooks: Sequence[LifecycleHook],
        top: tuple[str, LoadedPipeline],
        observer: HookObserver | None,
        lookup: RunLookup,
        root: Path,
        log: Path,
    ) -> None:
        self.manifest_hooks, self.lookup = list(manifest_hooks), lookup
        self.top_id, self.top, self.root, self.log = top[0], observer, root, log
        # run id -> (its pipeline, its hooks), None when not known
        self.known: dict[str, tuple[LoadedPipeline, list[LifecycleHook]] | None] = {
            top[0]: (top[1], [*manifest_hooks, *top[1].pipeline.hooks])
        }
        self.runs: dict[str, HookObserver | None] = {}

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        if self.top is not None:
            self.top.emit(events)
        for event in events:
            if event.run_id == self.top_id:
                continue
            if event.run_id not in self.runs:
                self.runs[event.run_id] = self._observer(event.run_id)
            found = self.runs[event.run_id]
            if found is not None:
                found.emit([event])

    def _observer(self, run_id: str) -> HookObserver | None:
        try:
            run = self.lookup(run_id)
            hooks = self._hooks(run_id, run)
        except Exception as exc:  # a hook must never take the run's process down
            print(f"warning: hooks of run {run_id}: {exc}", file=sys.stderr, flush=True)
            return None
        if run is None or hooks is None or not any(h.type in RUNS for h in hooks):
            return None
        return HookObserver(
            hooks,
            run_id=run_id,
            pipeline=run.loaded.name,
            workspace=run.workspace,
            root=self.root,
            log=self.log,
            others_from=len(hooks),  # its sub-pipeline runs have observers of their own
        )

    def _hooks(self, run_id: str, run: KnownRun | None) -> list[LifecycleHook] | None:
        """The hooks `run` fires (a matrix child: its parent's); remembered."""
        if run_id in self.known:
            found = self.known[run_id]
            return found[1] if found is not None else None
        hooks = None
        if run is not None:
            hooks = [*self.manifest_hooks, *run.loaded.pipeline.hooks]
            parent = self._parent(run)
            if parent is not None and _is_matrix(parent[0], run.parent_step_id):
                hooks = parent[1]
        self.known[run_id] = (run.loaded, hooks) if run is not None and hooks is not None else None
        return hooks

    def _parent(self, run: KnownRun) -> tuple[LoadedPipeline, list[LifecycleHook]] | None:
        if run.parent_run_id is None:
            return None
        if run.parent_run_id not in self.known:
            self._hooks(run.parent_run_id, self.lookup(run.parent_run_id))
        return self.known[run.parent_run_id]


def _is_matrix(loaded: LoadedPipeline, step_id: str | None) -> bool:
    return any(s.id == step_id and s.kind == "matrix" for s in loaded.pipeline.steps)


def stored_runs(store: RunReader) -> RunLookup:
    """A `RunLookup` reading the store: the pipeline as the run recorded it."""

    def lookup(run_id: str) -> KnownRun | None:
        from swell.manifest.loader import load_stored_pipeline

        run = store.get_run(run_id)
        text = store.pipeline_text(run_id)
        if not run.pipeline_path or text is None:
            return None
        loaded = load_stored_pipeline(Path(run.pipeline_path), text)
        return KnownRun(loaded, run.workspace or "", run.parent_run_id, run.parent_step_id)

    return lookup


def hook_observers(
    manifest_hooks: Sequence[LifecycleHook],
    loaded: LoadedPipeline,
    *,
    run_id: str,
    workspace: str,
    root: Path,
    state_dir: Path,
    children: RunLookup | None = None,
) -> list[EventSink]:
    """The observer of a run's hooks (none when it has none); with `children`, also
    those of its sub-pipeline runs (`HookTree`)."""
    hooks = [*manifest_hooks, *loaded.pipeline.hooks]
    top = None
    if any(h.type in RUNS for h in hooks):
        top = HookObserver(
            hooks,
            run_id=run_id,
            pipeline=loaded.name,
            workspace=workspace,
            root=root,
            log=state_dir / LOG_NAME,
            others_from=len(manifest_hooks) if children is not None else 0,
        )
    if children is not None:
        return [
            HookTree(manifest_hooks, (run_id, loaded), top, children, root, state_dir / LOG_NAME)
        ]
    return [top] if top is not None else []
