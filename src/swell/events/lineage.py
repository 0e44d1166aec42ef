"""Events of time travel: a visit's workspace checkpoint, a fork's link to its origin
(both ways) and a rewind (docs/time-travel.md). Part of the `Event` union in
events/models.py."""

from __future__ import annotations

from typing import Literal

from swell.events.envelope import BaseEvent, FreeText


class WorkspaceCheckpoint(BaseEvent):
    """The workspace as a visit left it, committed to the project's checkpoint
    repository (workspace/checkpoint.py); `changed` False: the same tree as the
    workspace's previous checkpoint, whose commit this is."""

    type: Literal["workspace.checkpoint"] = "workspace.checkpoint"
    commit: str
    tree: str
    parent: str | None = None
    changed: bool = True
    workspace: str = ""  # which of the run's workspaces: `main`, or a worktree's name
    # the run's shared remote the commit was pushed to (a run across hosts, without
    # credentials): where a host that lacks it fetches it (workspace/remote.py)
    remote: str | None = None


class RunForked(BaseEvent):
    """This run is a fork of `origin_run_id` at `step_id#visit`: its events before this
    one are the origin's, copied (docs/time-travel.md)."""

    type: Literal["run.forked"] = "run.forked"
    origin_run_id: str
    at_step: str
    at_visit: int
    checkpoint: str | None = None
    origin_seq: int = 0  # the origin's last event that was copied


class ForkMade(BaseEvent):
    """Recorded in the origin: a fork of it was made at `at_step#at_visit`."""

    type: Literal["run.fork_made"] = "run.fork_made"
    fork_run_id: str
    at_step: str
    at_visit: int


class RunRewound(BaseEvent):
    """The run continues from `at_step#at_visit`; the events after `kept_seq` (and before
    this one) are abandoned: kept in the log, no longer part of the run's state."""

    type: Literal["run.rewound"] = "run.rewound"
    at_step: str
    at_visit: int
    kept_seq: int
    checkpoint: str | None = None
    # the visits started after `kept_seq`, as STEP#VISIT: the tables drop their rows
    abandoned: list[str] = []
    # the run's context values as they were at `kept_seq`: the context table is made
    # them again (None: a rewind recorded before this was kept leaves the table)
    context: dict[str, FreeText] | None = None
