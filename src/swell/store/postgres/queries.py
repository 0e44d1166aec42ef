"""SQL text the Postgres store and its pages (postgres/pages.py) both read with."""

from __future__ import annotations

from swell.store.counters import LIVE_VISITS

# visits and last_seq for runs still going, as SQLite reads them
RUN_COLUMNS = (
    "id, pipeline, status, input, created_at, started_at, finished_at, updated_at, error, "
    f"{LIVE_VISITS} AS visits, "
    "COALESCE((SELECT MAX(e.seq) FROM events e WHERE e.run_id = runs.id), 0) AS last_seq, "
    "parent_run_id, parent_step_id, workspace, pipeline_path, project_root, owner_pid, "
    "owner_host, options"
)

# the holder of a run's advisory lock in this database, and who it recorded as executor
HOLDER = (
    "SELECT l.pid, r.owner_backend, r.owner_pid, r.owner_host FROM pg_locks l "
    "LEFT JOIN runs r ON r.id = %s WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.classid::bigint = %s AND l.objid::bigint = %s AND l.objsubid = 1"
)

INSERT_RUN = (
    "INSERT INTO runs (id, pipeline, pipeline_path, project_root, status, input, "
    "parent_run_id, parent_step_id, workspace, options, created_at, updated_at, "
    "owner_pid, pipeline_text) "
    "VALUES (%s, %s, %s, %s, 'pending', %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
