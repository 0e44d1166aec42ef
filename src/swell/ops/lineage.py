"""A run's lineage as `swell status` and the API show it: where it was forked from,
the forks made of it, its rewinds (docs/time-travel.md).

A fork's log starts with its origin's events, copied, marks of lineage among them
(the origin's own `run.forked`, its forks, its rewinds): the run's own are its last
`run.forked` and those after it. The forks of a run are those its log recorded
(`run.fork_made`, written only when no process was executing it) and those whose own
`run.forked` names it (`fork_links`): complete either way.

Apart from ops/checkpoints.py, and telling events by their `type` rather than their
class, so that `swell status` of a run with none of them imports neither the event
models (pydantic) nor the workspace's checkpoints: it must start quickly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from swell.events.models import Event, RunForked, RunRewound
    from swell.store.protocols import RunReader

KINDS = ("run.forked", "run.fork_made", "run.rewound")


@dataclass(frozen=True)
class Link:
    """The other run of a fork and the visit it was forked at."""

    run: str
    step: str
    visit: int

    @property
    def at(self) -> str:
        return f"{self.step}#{self.visit}"


@dataclass
class Links:
    forked_from: Link | None = None
    forks: list[Link] = field(default_factory=list)  # oldest first
    rewinds: list[RunRewound] = field(default_factory=list)  # the run's own


def links(store: RunReader, run_id: str) -> Links:
    """The run's own lineage, with every fork made of it."""
    found = store.events_of_kind(run_id, KINDS)  # parsed only when there are some
    # narrowed by `type` (the union's tag), so that no class need be imported
    own = _own_link(found)
    after = own.seq if own is not None else 0
    made = {  # fork -> (when, link); the first note of a fork wins
        e.fork_run_id: (e.ts, Link(e.fork_run_id, e.at_step, e.at_visit))
        for e in reversed(found)
        if e.type == "run.fork_made" and e.seq > after
    }
    # forks made while a process executed the run, which its log could not note
    for e in store.fork_links(run_id):
        if e.run_id not in made and _is_own(store, e):
            made[e.run_id] = (e.ts, Link(e.run_id, e.at_step, e.at_visit))
    return Links(
        forked_from=None if own is None else Link(own.origin_run_id, own.at_step, own.at_visit),
        forks=[link for _, link in sorted(made.values(), key=lambda m: (m[0], m[1].run))],
        rewinds=[e for e in found if e.type == "run.rewound" and e.seq > after],
    )


def _own_link(found: Sequence[Event]) -> RunForked | None:
    """A run's own `run.forked`: the last (those before it were copied from its origin)."""
    forked = [e for e in found if e.type == "run.forked"]
    return forked[-1] if forked else None


def _is_own(store: RunReader, link: RunForked) -> bool:
    """Whether `link` is its run's own, not one copied from the origin of its origin."""
    own = _own_link(store.events_of_kind(link.run_id, ("run.forked",)))
    return own is not None and own.seq == link.seq


def lineage(store: RunReader, run_id: str) -> dict[str, object]:
    """Where a run was forked from, the forks made of it and its rewinds."""
    found = links(store, run_id)
    origin = found.forked_from
    return {
        "forked_from": None if origin is None else {"run": origin.run, "at": origin.at},
        "forks": [{"run": f.run, "at": f.at} for f in found.forks],
        "rewinds": [
            {"to": f"{e.at_step}#{e.at_visit}", "abandoned_after_seq": e.kept_seq, "seq": e.seq}
            for e in found.rewinds
        ],
    }


__all__ = ["Link", "Links", "lineage", "links"]
