"""The rare event kinds a run's readers look up by kind (`events_of_kind`): its
lineage (forks, rewinds: `swell status`), its child runs, its recorded outcomes.

A run has a handful of them among its events, so each SQL backend keeps a partial
index of them alone (SQLite and Postgres migrations): `swell status` of a run of
30,000 visits finds them without reading its 120,000 events. An index is used only
when the query repeats its condition literally, so `marks_term` gives the condition
to add when every kind asked for is one of these.
"""

from __future__ import annotations

from collections.abc import Sequence

MARK_KINDS = ("run.forked", "run.fork_made", "run.rewound", "child.started", "outcome.recorded")
# the partial index's WHERE, as the migrations write it and the queries repeat it
MARKS = "type IN (" + ", ".join(f"'{kind}'" for kind in MARK_KINDS) + ")"


def marks_term(kinds: Sequence[str]) -> str:
    """`AND <the index's condition> ` when all `kinds` are marks, else nothing."""
    return f"AND {MARKS} " if kinds and set(kinds) <= set(MARK_KINDS) else ""
