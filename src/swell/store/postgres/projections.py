"""Postgres's query tables, kept up to date from events in the emitting transaction.

The fold is SQLite's (`store/projections.py:project`) over these `Tables`: a row an
event adds replaces a row of the same primary key (`ON CONFLICT ... DO UPDATE` every
column, which is SQLite's `INSERT OR REPLACE` for a table with one unique key); a
round also replaces the round holding its thread round (the second unique key of
`rounds`), so it deletes both first. Changes to rows already there are the shared
SQL, run with Postgres's placeholders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from swell.store.records import PRIMARY_KEYS, Record


def _upsert(table: str, record: Record) -> bytes:
    keys = ("run_id", *PRIMARY_KEYS[table])
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in record if c not in keys)
    return (
        f"INSERT INTO {table} ({', '.join(record)}) VALUES ({', '.join(['%s'] * len(record))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
    ).encode()


def _insert_round(record: Record) -> bytes:
    return (
        f"INSERT INTO rounds ({', '.join(record)}) VALUES ({', '.join(['%s'] * len(record))})"
    ).encode()


# a table's statement, made from its first record: a builder gives its columns in one order
_STATEMENTS: dict[str, bytes] = {}


class PostgresTables:
    """The query tables through a cursor in the emitting transaction (or a list of
    statements to run in it: `projections.Statements`)."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def insert(self, table: str, record: Record) -> None:
        statement = _STATEMENTS.get(table)
        if statement is None:
            made = _insert_round(record) if table == "rounds" else _upsert(table, record)
            statement = _STATEMENTS[table] = made
        if table == "rounds":
            self.cur.execute(
                "DELETE FROM rounds WHERE run_id = %s AND (round = %s OR "
                "(thread IS NOT NULL AND thread = %s AND thread_round = %s))",
                (record["run_id"], record["round"], record["thread"], record["thread_round"]),
            )
        self.cur.execute(statement, tuple(record.values()))

    def update(self, sql: str, params: Sequence[Any]) -> None:
        # the shared SQL holds no `?` but its placeholders, and no `%`
        self.cur.execute(sql.replace("?", "%s"), params)
