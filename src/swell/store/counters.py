"""Counters of a run's visits kept in its `runs` row, so that nothing reading a run
counts its visits: `swell status`, the dashboard's run page and its list read a
30,000-visit run as fast as a 3-visit one (issue 35).

The SQL backends keep them with triggers on `visits`, so they change in the
transaction that changes a visit row, whatever statement does it: a visit started
(a row added), finished or interrupted (its status and spend changed), or abandoned
by a rewind (its row deleted). SQLite's `INSERT OR REPLACE` would delete the row it
replaces without firing a delete trigger, so the projections add a visit row as an
upsert (store/projections.py). The memory store counts its rows when asked.

- `visit_rows`: every visit row; the run page's visit count;
- `running_visits`, `finished_visits` (succeeded or failed), `interrupted_visits`;
  a running run's `visits` is `visit_rows - interrupted_visits` (rows.py: RunRow);
- `tokens_in`, `tokens_out`, `cost_usd`: the visits' spend, summed.
"""

from __future__ import annotations

COLUMNS = (
    "visit_rows",
    "running_visits",
    "finished_visits",
    "interrupted_visits",
    "tokens_in",
    "tokens_out",
    "cost_usd",
)

# a running run's visits: all but the interrupted ones (finished: as RunFinished said)
LIVE_VISITS = "CASE WHEN finished_at IS NULL THEN visit_rows - interrupted_visits ELSE visits END"


_STATUSES = {
    "running_visits": "{row}.status = 'running'",
    "finished_visits": "{row}.status IN ('succeeded', 'failed')",
    "interrupted_visits": "{row}.status = 'interrupted'",
}


def _term(column: str, row: str, flag: str) -> str:
    """What one visit row (NEW or OLD) adds to a counter; `flag` makes a condition 0
    or 1 in the backend's SQL."""
    if column == "visit_rows":
        return "1"
    if column in _STATUSES:
        return flag.format(_STATUSES[column].format(row=row))
    return f"COALESCE({row}.{column}, 0)"


def _assignments(*rows: tuple[str, str], flag: str) -> str:
    """`col = col + NEW's - OLD's` for each counter, given (row, sign) pairs."""
    return ", ".join(
        f"{c} = {c} " + " ".join(f"{sign} {_term(c, row, flag)}" for row, sign in rows)
        for c in COLUMNS
    )


# ------------------------------------------------------------------ SQLite

_SQLITE_FLAG = "({})"  # a comparison is 0 or 1


def sqlite_script() -> list[str]:
    """The statements of SQLite's migration: the columns, the triggers, the counts of
    the visits stored so far."""
    add = [
        f"ALTER TABLE runs ADD COLUMN {c} {'REAL' if c == 'cost_usd' else 'INTEGER'} "
        "NOT NULL DEFAULT 0"
        for c in COLUMNS
    ]
    triggers = [
        _sqlite_trigger("visits_counted_in", "INSERT", [("NEW", "+")]),
        _sqlite_trigger("visits_counted_out", "DELETE", [("OLD", "-")]),
        _sqlite_trigger("visits_counted_change", "UPDATE", [("NEW", "+"), ("OLD", "-")]),
    ]
    return [*add, *triggers, _recount(_SQLITE_FLAG)]


def _sqlite_trigger(name: str, op: str, rows: list[tuple[str, str]]) -> str:
    run = rows[0][0]
    return (
        f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {op} ON visits BEGIN "
        f"UPDATE runs SET {_assignments(*rows, flag=_SQLITE_FLAG)} WHERE id = {run}.run_id; END"
    )


# ------------------------------------------------------------------ Postgres

_PG_FLAG = "({})::int"


def postgres_script() -> list[str]:
    """The statements of Postgres's migration, as SQLite's (one trigger function)."""
    add = [
        f"ALTER TABLE runs ADD COLUMN IF NOT EXISTS {c} "
        f"{'DOUBLE PRECISION' if c == 'cost_usd' else 'BIGINT'} NOT NULL DEFAULT 0"
        for c in COLUMNS
    ]
    function = (
        "CREATE OR REPLACE FUNCTION swell_count_visits() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN "
        "IF TG_OP = 'INSERT' THEN "
        f"UPDATE runs SET {_assignments(('NEW', '+'), flag=_PG_FLAG)} WHERE id = NEW.run_id; "
        "ELSIF TG_OP = 'DELETE' THEN "
        f"UPDATE runs SET {_assignments(('OLD', '-'), flag=_PG_FLAG)} WHERE id = OLD.run_id; "
        "ELSE "
        f"UPDATE runs SET {_assignments(('NEW', '+'), ('OLD', '-'), flag=_PG_FLAG)} "
        "WHERE id = NEW.run_id; "
        "END IF; RETURN NULL; END $$"
    )
    trigger = (
        "CREATE TRIGGER visits_counted AFTER INSERT OR UPDATE OR DELETE ON visits "
        "FOR EACH ROW EXECUTE FUNCTION swell_count_visits()"
    )
    return [*add, function, trigger, _recount(_PG_FLAG)]


def _recount(flag: str) -> str:
    """Every run's counters from its visit rows (the migration's one full read)."""
    sums = {
        "visit_rows": "COUNT(*)",
        **{c: f"SUM({flag.format(cond.format(row='v'))})" for c, cond in _STATUSES.items()},
        "tokens_in": "SUM(v.tokens_in)",
        "tokens_out": "SUM(v.tokens_out)",
        "cost_usd": "SUM(v.cost_usd)",
    }
    return "UPDATE runs SET " + ", ".join(
        f"{c} = COALESCE((SELECT {sums[c]} FROM visits v WHERE v.run_id = runs.id), 0)"
        for c in COLUMNS
    )
