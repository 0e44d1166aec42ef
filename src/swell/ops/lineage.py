"""A run's lineage as `swell status` shows it: where it was forked from, the forks
made of it, its rewinds (docs/time-travel.md).

Apart from ops/checkpoints.py, and telling events by their `type` rather than their
class, so that `swell status` of a run with none of them imports neither the event
models (pydantic) nor the workspace's checkpoints: it must start quickly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swell.store.protocols import RunReader

KINDS = ("run.forked", "run.fork_made", "run.rewound")


def lineage(store: RunReader, run_id: str) -> dict[str, object]:
    """Where a run was forked from, the forks made of it and its rewinds."""
    found = store.events_of_kind(run_id, KINDS)  # parsed only when there are some
    # narrowed by `type` (the union's tag), so that no class need be imported
    origins = [e for e in found if e.type == "run.forked"]
    forks = [e for e in found if e.type == "run.fork_made"]
    rewinds = [e for e in found if e.type == "run.rewound"]
    origin = origins[0] if origins else None
    return {
        "forked_from": None
        if origin is None
        else {"run": origin.origin_run_id, "at": f"{origin.at_step}#{origin.at_visit}"},
        "forks": [{"run": e.fork_run_id, "at": f"{e.at_step}#{e.at_visit}"} for e in forks],
        "rewinds": [
            {"to": f"{e.at_step}#{e.at_visit}", "abandoned_after_seq": e.kept_seq, "seq": e.seq}
            for e in rewinds
        ],
    }


__all__ = ["lineage"]
