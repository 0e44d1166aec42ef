"""What crosses the wire between client, workflow and activities: dataclasses, and the
engine's own models and dataclasses (a visit's `StepResult`, a run's `Limits` and
`RunOptions`), carried by temporalio's pydantic data converter (`client.DATA_CONVERTER`).
Events for the store travel as their JSON text."""

from __future__ import annotations

from dataclasses import dataclass, field

from swell.engine.loop.decisions import Limits
from swell.engine.visit.context import RunOptions, StepResult


@dataclass
class RunSpec:
    """Everything a worker on any host needs to execute a run: where the project and
    the store are, the pipeline as it was when the run started, the run's options."""

    run_id: str
    project_root: str
    store: str  # the store's location (a postgresql:// URL across hosts)
    pipeline_path: str
    pipeline_text: str
    input: str
    workspace: str
    run_dir: str
    limits: Limits  # as the run loop applies them (the project's runtime settings)
    # `swell run`'s options, or what a parent step's `config` handed its child run
    options: RunOptions = field(default_factory=RunOptions)
    heartbeat_seconds: float = 10.0  # how soon a visit on a dead worker is given to another
    # visits as local activities of the worker driving the workflow (runtime.temporal.
    # local_visits): no task dispatch per visit, for runs of short steps
    local_visits: bool = False
    # visits one workflow execution runs before it continues as new (a history stays short)
    continue_after: int = 1000
    # a continued execution's start: the run's folded state (RunState.to_snapshot, JSON)
    # and the workflow time the run started at
    carried: str | None = None
    started_at: float | None = None
    # a sub-pipeline's run: its parent, and what the parent step's `config` handed down
    parent_run_id: str | None = None
    parent_step_id: str | None = None
    # workspaces across hosts (workspace_sync.py): the bare remote each visit pushes
    # its commit to, the commit the run's next visit starts from (carried over a
    # continue-as-new), and how long a visit waits for the run's own worker
    remote: str | None = None
    head: str | None = None
    sticky_seconds: float = 0.0
    # templated persona names as the run renders them (engine/agent/persona_names.py), by
    # step id: the workflow cannot run git to detect the forge, so the client does
    personas: dict[str, str | None] = field(default_factory=dict)


UNRECORDED = "swell.unrecorded"  # a local visit's events could not be stored: it did not run


@dataclass
class RecordRequest:
    """A batch of stamped events for the store, in seq order."""

    store: str
    run_id: str
    events: list[str]


@dataclass
class VisitRequest:
    """One visit for an activity to run."""

    spec: RunSpec
    step_id: str
    visit: int
    reason: str
    source_step: str | None = None
    source_visit: int | None = None
    base: str | None = None  # the workspace commit this visit starts from (remote mode)
    tries_before: int = 0  # tries on the run's own worker before this one (stickiness)
    # a local visit's: the run's events recorded before it, to store before it runs
    events: list[str] = field(default_factory=list)
    # the last event recorded before the visit: a worker whose kept state of the run is
    # that far need not read the store for what it missed (None: it reads)
    seq: int | None = None


@dataclass
class VisitReply:
    """A finished visit: the engine's own `StepResult`, whose `events` are what the
    visit emitted while it ran, then what it returned; and where it ran."""

    result: StepResult
    duration_ms: int
    commit: str | None = None  # the workspace after the visit, pushed (remote mode)
    queue: str | None = None  # the worker's own task queue, where its warm workspace is


@dataclass
class GateRequest:
    """`swell approve` / `swell reject`: a decision on a waiting approval gate."""

    decision: str  # approved | rejected
    step_id: str | None = None  # None: the only gate waiting
    choice: str | None = None
    reason: str | None = None
    by: str | None = None


@dataclass
class ChildStart:
    """A visit asks its run's workflow for a child run (the `start_child` update).
    `key` names the call within the visit (its item, and how many calls for that item
    came before), so a visit that runs again gets the child its last attempt started."""

    key: str
    step_id: str
    visit: int
    pipeline: str
    input: str
    item: int | None = None
    own_workspace: bool = False
    env: dict[str, str] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    max_cycles: int | None = None
    # a child sharing its parent's workspace, with a workspace remote: the commit the
    # parent's visit handed over, which the child's first visit starts from
    head: str | None = None


@dataclass
class ChildCreate:
    """For the `swell.create_child` local activity: record the child run in the store."""

    parent: RunSpec
    start: ChildStart


@dataclass
class ChildStarted:
    """The child run a `start_child` update started (or found started), or why none."""

    run_id: str
    pipeline: str
    error: str | None = None
    spec: RunSpec | None = None  # the child's, for the workflow to start it with


@dataclass
class RunOutcome:
    """How the workflow ended the run."""

    run_id: str
    status: str
    error: str | None = None
    visits: int = 0
    head: str | None = None  # the workspace commit the run ended at (remote mode)
