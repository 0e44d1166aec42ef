"""A run's statuses, without the event models (readers that only list runs import
this, not pydantic's models)."""

from __future__ import annotations

from typing import Literal

RunStatus = Literal[
    "pending", "running", "waiting", "succeeded", "failed", "cancelled", "interrupted", "rejected"
]
# `rejected`: a contract with `on_failure: rejected` failed; the work was judged and
# turned down, which is an answer (exit 0), not an error
FinalStatus = Literal["succeeded", "failed", "cancelled", "interrupted", "rejected"]
# runs that are over for good (`interrupted` ones continue with `swell resume`)
ENDED_FOR_GOOD: tuple[FinalStatus, ...] = ("succeeded", "failed", "cancelled", "rejected")
