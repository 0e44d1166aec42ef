"""A batch of events as one message to Postgres: the events' INSERT, the projections'
statements and the NOTIFY, their values written in line as SQL literals.

The server runs the statements of one simple-query message as one transaction (it
has no BEGIN or COMMIT of its own): all commit, or the first failing one rolls all
back. One message is one round trip a batch, with no per-statement protocol
exchange. Pipeline mode, which the batch used before, sent each statement as it came
and waited on the socket for each: 13 waits and ~1 ms of client CPU a batch, 5-7 ms
wall a commit on a quiet server, against ~0.3 ms for a round trip.

Literals: E'...' strings (backslash and quote doubled, so they read the same whatever
`standard_conforming_strings` says), integers as digits, floats by `repr` (quoted
for the non-finite ones), NULL, TRUE and FALSE. The shared SQL holds no `%` but its
placeholders (`store/projections.py`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swell.events.models import BaseEvent

_INSERT_EVENTS = "INSERT INTO events (run_id, seq, ts, type, step_id, visit, data) VALUES "


def batch_sql(events: Sequence[BaseEvent], channel: str, notify: bool = True) -> str:
    """The statements that store `events`, their projections and (if `notify`) one
    NOTIFY per run of the batch, as one string."""
    from swell.events.models import event_data  # loaded only by writers: readers stay quick
    from swell.store.postgres.projections import PostgresTables
    from swell.store.projections import Statements, project

    rows = ",".join(
        "("
        + ",".join(
            (
                literal(e.run_id),
                str(int(e.seq)),
                literal(e.ts),
                literal(getattr(e, "type", "")),
                literal(e.step_id),
                literal(e.visit),
                literal(event_data(e)),
            )
        )
        + ")"
        for e in events
    )
    statements = Statements()
    tables = PostgresTables(statements)
    for event in events:
        project(tables, event)
    parts = [_INSERT_EVENTS + rows]
    parts.extend(bound(statement, params) for statement, params in statements)
    if notify:  # only when a connection listens (postgres/listen.py)
        for run_id in dict.fromkeys(e.run_id for e in events):
            parts.append(
                f"SELECT pg_notify({literal(channel)}, {literal(run_id)}) "
                "WHERE EXISTS (SELECT FROM listeners)"
            )
    return ";\n".join(parts)


def bound(statement: str | bytes, params: Sequence[Any]) -> str:
    """`statement` with its `%s` placeholders replaced by `params` as literals."""
    pieces = _pieces(statement)
    if len(pieces) != len(params) + 1:
        raise ValueError(f"{len(params)} values for {len(pieces) - 1} placeholders")
    out = [pieces[0]]
    for value, piece in zip(params, pieces[1:], strict=True):
        out.append(literal(value))
        out.append(piece)
    return "".join(out)


@functools.lru_cache(maxsize=512)
def _pieces(statement: str | bytes) -> tuple[str, ...]:
    """A statement split at its placeholders (the projections' few, over and over)."""
    text = statement.decode() if isinstance(statement, bytes) else statement
    return tuple(text.split("%s"))


def literal(value: Any) -> str:
    """One value as a Postgres literal."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        if "\0" in value:
            raise ValueError("a NUL character cannot be stored in Postgres text")
        return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    if value is True:
        return "TRUE"
    if value is False:
        return "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"'{value!r}'::float8"
    raise TypeError(f"no Postgres literal for {type(value).__name__}")
