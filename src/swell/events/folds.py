"""The event kinds a fold passes over, written once for every fold of the log: the
run's state (`engine/loop/state.py`) and the query tables (`store/projections.py`,
`store/memory/tables.py`). A fold passes over the kinds in `UNREAD_BY_STATE` or
`UNREAD_BY_TABLES` (a set lookup by type, before any call) and matches the rest
exhaustively: its last case asks `unread_by_state` or `unread_by_tables`, then
`assert_never`, so a new kind is either folded or named here."""

from __future__ import annotations

from typing import get_args

from typing_extensions import TypeIs

from swell.events.models import (
    AgentSession,
    AgentText,
    AgentToolCall,
    AgentToolResult,
    AgentUsage,
    BaseEvent,
    BreakerTripped,
    BudgetExceeded,
    BudgetWarning,
    ChildRunStarted,
    ContractFailed,
    ContractPassed,
    FailureAbsorbed,
    ForkMade,
    LimitExceeded,
    OutcomeRecorded,
    PromptRendered,
    RelayCheckpoint,
    RelayResumed,
    RelayTriggered,
    RetryRequested,
    ReviewStarted,
    ReworkRequested,
    RouteTaken,
    RunForked,
    SandboxConnection,
    StepQueued,
    ThreadContext,
    ThreadSummarized,
    Warning,
    WorkspaceCheckpoint,
)

# what agents said and did, and notes: the run's state reads none of them
UnreadByState = (
    AgentText
    | AgentToolCall
    | AgentToolResult
    | RouteTaken
    | AgentUsage
    | OutcomeRecorded
    | PromptRendered
    | AgentSession
    | ThreadContext
    | ContractPassed
    | ContractFailed
    | ReviewStarted
    | RelayTriggered
    | RelayCheckpoint
    | RelayResumed
    | LimitExceeded
    | BreakerTripped
    | BudgetExceeded
    | Warning
    | SandboxConnection
    | WorkspaceCheckpoint
    | ForkMade
)
# ... and what only the run's state reads (its queue, reworks, retries, children)
UnreadByTables = (
    UnreadByState
    | StepQueued
    | ThreadSummarized
    | ReworkRequested
    | RetryRequested
    | FailureAbsorbed
    | ChildRunStarted
    | BudgetWarning
    | RunForked
)
# a set lookup by type: `isinstance` against a union of pydantic models is ~50x slower
UNREAD_BY_STATE: frozenset[type[BaseEvent]] = frozenset(get_args(UnreadByState))
UNREAD_BY_TABLES: frozenset[type[BaseEvent]] = frozenset(get_args(UnreadByTables))


def unread_by_state(event: BaseEvent) -> TypeIs[UnreadByState]:
    return type(event) in UNREAD_BY_STATE


def unread_by_tables(event: BaseEvent) -> TypeIs[UnreadByTables]:
    return type(event) in UNREAD_BY_TABLES
