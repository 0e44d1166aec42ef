"""Postgres's query tables, kept up to date from events in the emitting transaction.

Rows an event adds come from `records.INSERTS` and replace a row of the same primary
key (`ON CONFLICT ... DO UPDATE` every column, which is SQLite's `INSERT OR REPLACE`
for a table with one unique key); a round also replaces the round holding its thread
round (the second unique key of `rounds`), so it deletes both first. Changes to rows
already there are SQLite's own (`projections.UPDATES`), run with Postgres's
placeholders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from swell.store.projections import UPDATES
from swell.store.records import INSERTS, PRIMARY_KEYS, Record

Projection = Callable[[Any, Any], None]  # (a cursor in the emitting transaction, the event)


def _upsert(table: str, record: Record) -> bytes:
    keys = ("run_id", *PRIMARY_KEYS[table])
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in record if c not in keys)
    return (
        f"INSERT INTO {table} ({', '.join(record)}) VALUES ({', '.join(['%s'] * len(record))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
    ).encode()


def _insert(table: str, build: Callable[[Any], Record]) -> Projection:
    statement = b""  # made from the first record: a build gives its columns in one order

    def project(cur: Any, e: Any) -> None:
        nonlocal statement
        record = build(e)
        if not statement:
            statement = _upsert(table, record)
        cur.execute(statement, tuple(record.values()))

    return project


def _insert_round(build: Callable[[Any], Record]) -> Projection:
    statement = b""

    def project(cur: Any, e: Any) -> None:
        nonlocal statement
        record = build(e)
        if not statement:
            statement = (
                f"INSERT INTO rounds ({', '.join(record)}) "
                f"VALUES ({', '.join(['%s'] * len(record))})"
            ).encode()
        cur.execute(
            "DELETE FROM rounds WHERE run_id = %s AND (round = %s OR "
            "(thread IS NOT NULL AND thread = %s AND thread_round = %s))",
            (e.run_id, record["round"], record["thread"], record["thread_round"]),
        )
        cur.execute(statement, tuple(record.values()))

    return project


class _Qmark:
    """A cursor that takes the `?` placeholders of the shared projections' SQL
    (projections.UPDATES; their SQL holds no other `?` and no `%`)."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def execute(self, sql: str, params: Sequence[Any], /) -> Any:
        return self.cur.execute(sql.replace("?", "%s"), params)


def _qmark(update: Projection) -> Projection:
    def project(cur: Any, e: Any) -> None:
        update(_Qmark(cur), e)

    return project


PROJECTIONS: dict[str, Projection] = {
    **{kind: _insert(table, build) for kind, (table, build) in INSERTS.items()},
    "round.recorded": _insert_round(INSERTS["round.recorded"][1]),
    **{kind: _qmark(update) for kind, update in UPDATES.items()},
}
