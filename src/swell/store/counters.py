"""Counters of a run's visits kept beside its `runs` row, so that nothing reading a run
counts its visits: `swell status`, the dashboard's run page and its list read a
30,000-visit run as fast as a 3-visit one (issue 35).

The SQL backends keep them in `run_counts` (one narrow row a run, made with the run)
with triggers on `visits`, so they change in the transaction that changes a visit
row, whatever statement does it: a visit started (a row added), finished or
interrupted (its status and spend changed), or abandoned by a rewind (its row
deleted). A table of their own, not columns of `runs`: a runs row holds the
pipeline's text and the input, and SQLite rewrites a row to change a column of it;
on the loop's batches the triggers cost ~20 us a visit on a bare runs row and ~40 us
on one with an 8 KB pipeline text (SQLite, p10 of 6,000 batches, load 45). SQLite's
`INSERT OR REPLACE` would delete the visit row it replaces without firing a delete
trigger, so the projections add a visit row as an upsert (store/projections.py). The
memory store counts its rows when asked.

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
LIVE_VISITS = (
    "CASE WHEN finished_at IS NULL THEN COALESCE((SELECT c.visit_rows - c.interrupted_visits "
    "FROM run_counts c WHERE c.run_id = runs.id), 0) ELSE visits END"
)


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
    """The statements of SQLite's migration: the table, the triggers, the counts of the
    visits stored so far."""
    columns = ", ".join(
        f"{c} {'REAL' if c == 'cost_usd' else 'INTEGER'} NOT NULL DEFAULT 0" for c in COLUMNS
    )
    return [
        f"CREATE TABLE IF NOT EXISTS run_counts (run_id TEXT PRIMARY KEY, {columns}) WITHOUT ROWID",
        "CREATE TRIGGER IF NOT EXISTS runs_counted AFTER INSERT ON runs BEGIN "
        "INSERT OR IGNORE INTO run_counts (run_id) VALUES (NEW.id); END",
        "CREATE TRIGGER IF NOT EXISTS runs_uncounted AFTER DELETE ON runs BEGIN "
        "DELETE FROM run_counts WHERE run_id = OLD.id; END",
        _sqlite_trigger("visits_counted_in", "INSERT", [("NEW", "+")]),
        _sqlite_trigger("visits_counted_out", "DELETE", [("OLD", "-")]),
        _sqlite_trigger("visits_counted_change", "UPDATE", [("NEW", "+"), ("OLD", "-")]),
        *_recount(_SQLITE_FLAG, "INSERT OR REPLACE INTO run_counts"),
    ]


def _sqlite_trigger(name: str, op: str, rows: list[tuple[str, str]]) -> str:
    run = rows[0][0]
    return (
        f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {op} ON visits BEGIN "
        f"UPDATE run_counts SET {_assignments(*rows, flag=_SQLITE_FLAG)} "
        f"WHERE run_id = {run}.run_id; END"
    )


# ------------------------------------------------------------------ Postgres

_PG_FLAG = "({})::int"


def postgres_script() -> list[str]:
    """The statements of Postgres's migration, as SQLite's (trigger functions)."""
    columns = ", ".join(
        f"{c} {'DOUBLE PRECISION' if c == 'cost_usd' else 'BIGINT'} NOT NULL DEFAULT 0"
        for c in COLUMNS
    )
    visits = (
        "CREATE OR REPLACE FUNCTION swell_count_visits() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN "
        "IF TG_OP = 'INSERT' THEN "
        f"UPDATE run_counts SET {_assignments(('NEW', '+'), flag=_PG_FLAG)} "
        "WHERE run_id = NEW.run_id; "
        "ELSIF TG_OP = 'DELETE' THEN "
        f"UPDATE run_counts SET {_assignments(('OLD', '-'), flag=_PG_FLAG)} "
        "WHERE run_id = OLD.run_id; "
        "ELSE "
        f"UPDATE run_counts SET {_assignments(('NEW', '+'), ('OLD', '-'), flag=_PG_FLAG)} "
        "WHERE run_id = NEW.run_id; "
        "END IF; RETURN NULL; END $$"
    )
    runs = (
        "CREATE OR REPLACE FUNCTION swell_count_runs() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN "
        "IF TG_OP = 'INSERT' THEN "
        "INSERT INTO run_counts (run_id) VALUES (NEW.id) ON CONFLICT DO NOTHING; "
        "ELSE DELETE FROM run_counts WHERE run_id = OLD.id; "
        "END IF; RETURN NULL; END $$"
    )
    return [
        f'CREATE TABLE IF NOT EXISTS run_counts (run_id TEXT COLLATE "C" PRIMARY KEY, {columns})',
        visits,
        runs,
        "CREATE TRIGGER visits_counted AFTER INSERT OR UPDATE OR DELETE ON visits "
        "FOR EACH ROW EXECUTE FUNCTION swell_count_visits()",
        "CREATE TRIGGER runs_counted AFTER INSERT OR DELETE ON runs "
        "FOR EACH ROW EXECUTE FUNCTION swell_count_runs()",
        *_recount(_PG_FLAG, "INSERT INTO run_counts"),
    ]


def _recount(flag: str, insert: str) -> list[str]:
    """Every run's counters from its visit rows (the migration's one full read)."""
    sums = {
        "visit_rows": "COUNT(v.run_id)",
        **{
            c: f"COALESCE(SUM({flag.format(cond.format(row='v'))}), 0)"
            for c, cond in _STATUSES.items()
        },
        "tokens_in": "COALESCE(SUM(v.tokens_in), 0)",
        "tokens_out": "COALESCE(SUM(v.tokens_out), 0)",
        "cost_usd": "COALESCE(SUM(v.cost_usd), 0)",
    }
    return [
        f"{insert} (run_id, {', '.join(COLUMNS)}) "
        f"SELECT r.id, {', '.join(sums[c] for c in COLUMNS)} "
        "FROM runs r LEFT JOIN visits v ON v.run_id = r.id GROUP BY r.id"
    ]
