"""Rules every store backend applies the same way: run lookup, gate decisions, timestamps,
the errors for a batch that repeats events and for snapshots, a run's input masked.

A backend fetches the rows; these functions decide, so the errors people see are the
same whatever the backend.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from swell.errors import RunBusy, RunNotFound, RunStateError, StoreError
from swell.events.statuses import ENDED_FOR_GOOD
from swell.store.rows import GateRow, Owner, RunRow

if TYPE_CHECKING:
    from swell.events.models import BaseEvent


def this_process() -> Owner:
    import socket  # imported when a run is owned: readers of the store start faster

    return Owner(os.getpid(), socket.gethostname())


def busy(run_id: str, owner: Owner | None) -> RunBusy:
    who = f"pid {owner.pid} on {owner.host}" if owner else "another process"
    return RunBusy(f"run {run_id} is already being executed by {who}")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stored_input(text: str) -> str:
    """A run's input as a store keeps it: its secrets masked (events/redact.py), so
    no reader of the runs table (`swell list`, `swell status`, the dashboard) shows
    them. The process that starts the run keeps the input it was given."""
    from swell.events.redact import mask_secrets  # pydantic: not for stores that only read

    return mask_secrets(text)


def run_values(
    *,
    run_id: str,
    pipeline: str,
    input_text: str,
    workspace: str,
    pipeline_path: str | None = None,
    project_root: str | None = None,
    parent_run_id: str | None = None,
    parent_step_id: str | None = None,
    options: dict[str, Any] | None = None,
    pipeline_text: str | None = None,
) -> tuple[object, ...]:
    """`RunWriter.create_run`'s arguments as the SQL backends insert them: (id, pipeline,
    pipeline_path, project_root, input, parent_run_id, parent_step_id, workspace,
    options, created_at, updated_at, owner_pid, pipeline_text)."""
    import json

    stamp = now_iso()
    return (
        *(run_id, pipeline, pipeline_path, project_root, stored_input(input_text)),
        *(parent_run_id, parent_step_id, workspace, json.dumps(options or {})),
        *(stamp, stamp, os.getpid(), pipeline_text),
    )


CANDIDATES = 10  # runs an ambiguous prefix lists


def one_run(run_id: str, matches: Sequence[RunRow], where: str) -> RunRow:
    """The run an id prefix names, from (up to CANDIDATES + 1 of) the runs whose id starts
    with it, newest first."""
    if not run_id:
        raise RunNotFound("give a run id, or a prefix of one (see `swell list`)")
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = "\n".join(f"  {m.id}  {m.status}" for m in matches[:CANDIDATES])
        more = "\n  …" if len(matches) > CANDIDATES else ""
        raise RunNotFound(f"run id prefix '{run_id}' matches several runs:\n{shown}{more}")
    raise RunNotFound(f"no run '{run_id}' in {where} (see `swell list`)")


def decide(
    gates: Sequence[GateRow],
    run_id: str,
    step_id: str | None,
    decision: Literal["approved", "rejected"],
    choice: str | None,
    reason: str | None,
    by: str | None,
) -> GateRow:
    """The waiting gate a person's decision applies to, with the decision filled in.

    The backend stores decision, choice, reason and decided_by of the returned row;
    its status stays `waiting` until the run acts on the decision.
    """
    waiting = [g for g in gates if g.status == "waiting"]
    if step_id:
        waiting = [g for g in waiting if g.step_id == step_id]
    if not waiting:
        what = f"step '{step_id}' of run {run_id}" if step_id else f"run {run_id}"
        raise RunStateError(f"no gate is waiting at {what}")
    if len(waiting) > 1:
        names = ", ".join(g.step_id for g in waiting)
        raise RunStateError(f"several gates are waiting ({names}); name the step")
    gate = waiting[0]
    if gate.decision is not None:
        raise RunStateError(
            f"gate '{gate.step_id}' was already {gate.decision}; the run has not "
            "picked the decision up yet (is it running? try `swell resume`)"
        )
    keys = [c["key"] for c in gate.choices]
    if choice is not None and keys and choice not in keys:
        raise RunStateError(
            f"'{choice}' is not a choice of gate '{gate.step_id}' (choices: {', '.join(keys)})"
        )
    return replace(gate, decision=decision, choice=choice, reason=reason, decided_by=by)


def pending(gates: Sequence[GateRow], step_id: str, visit: int) -> GateRow | None:
    """A decision recorded for a gate the run has not acted on yet."""
    for gate in gates:
        waiting = gate.step_id == step_id and gate.visit == visit and gate.status == "waiting"
        if waiting and gate.decision:
            return gate
    return None


def already_stored(events: Sequence[BaseEvent], stored: set[tuple[str, int]]) -> StoreError:
    """The error for a batch that repeats a stored event, or one of its own: it names the
    first such event in the batch."""
    seen: set[tuple[str, int]] = set()
    for event in events:
        key = (event.run_id, event.seq)
        if key in stored or key in seen:
            return StoreError(f"event {event.seq} of run {event.run_id} is already stored")
        seen.add(key)
    return StoreError("the batch was not stored: an event in it is already stored")


MAX_SEQ = (1 << 32) - 1  # the highest seq a store keeps


def seq_after(after_seq: int) -> int:
    """`after_seq` as a store reads it: below 0 is 0 and past MAX_SEQ is MAX_SEQ (no
    event is after it), so an absurd number never reaches the database."""
    return min(max(after_seq, 0), MAX_SEQ)


def check_seqs(events: Sequence[BaseEvent]) -> None:
    """Every event's seq is one a store can keep (0 to MAX_SEQ)."""
    for event in events:
        if not 0 <= event.seq <= MAX_SEQ:
            raise StoreError(
                f"event {event.seq} of run {event.run_id} has a seq out of range (0 to {MAX_SEQ})"
            )


FINISHED_FOR_GOOD = ENDED_FOR_GOOD  # a snapshot of these is dropped


def check_snapshot(run_id: str, seq: int, found: bool, last_seq: int, where: str) -> None:
    """A snapshot may be kept of a stored run, up to its last stored event."""
    if not found:
        raise RunNotFound(f"no run '{run_id}' in {where}")
    if seq < 0 or seq > last_seq:
        raise StoreError(
            f"a snapshot of run {run_id} at event {seq} is past its stored events ({last_seq})"
        )
