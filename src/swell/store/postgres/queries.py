"""SQL text the Postgres store and its pages (postgres/pages.py) both read with."""

from __future__ import annotations

# visits and last_seq are derived for runs still going, as SQLite does
RUN_COLUMNS = (
    "id, pipeline, status, input, created_at, started_at, finished_at, updated_at, error, "
    "CASE WHEN finished_at IS NULL THEN (SELECT COUNT(*) FROM visits v WHERE v.run_id = runs.id "
    "AND v.status IN ('succeeded', 'failed')) ELSE visits END AS visits, "
    "COALESCE((SELECT MAX(e.seq) FROM events e WHERE e.run_id = runs.id), 0) AS last_seq, "
    "parent_run_id, parent_step_id, workspace, pipeline_path, project_root, owner_pid, "
    "owner_host, options"
)
