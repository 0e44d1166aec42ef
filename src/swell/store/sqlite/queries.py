"""SQL text the SQLite store and its pages (sqlite/pages.py) both read with."""

from __future__ import annotations

from swell.store.counters import LIVE_VISITS

# the keys of a run's events after a seq (parameters: run id, seq, run id): see sqlite/compact.py
EVENTS_AFTER = (
    "id > (SELECT num * 4294967296 FROM event_runs WHERE run_id = ?) + ? "
    "AND id <= (SELECT num * 4294967296 + 4294967295 FROM event_runs WHERE run_id = ?)"
)


# visits (going on or finished, not interrupted: as the run page counts them) for a run
# still going from the counters the triggers keep (store/counters.py); last_seq from the
# newest event's key
RUN_COLUMNS = (
    "id, pipeline, status, input, created_at, started_at, finished_at, updated_at, error, "
    f"{LIVE_VISITS} AS visits, "
    "COALESCE((SELECT e.id FROM events e WHERE e.id BETWEEN "
    "(SELECT num * 4294967296 FROM event_runs n WHERE n.run_id = runs.id) AND "
    "(SELECT num * 4294967296 + 4294967295 FROM event_runs n WHERE n.run_id = runs.id) "
    "ORDER BY e.id DESC LIMIT 1) & 4294967295, 0) AS last_seq, "
    "parent_run_id, parent_step_id, workspace, pipeline_path, project_root, owner_pid, "
    "owner_host, options"
)

INSERT_RUN = (
    "INSERT INTO runs (id, pipeline, pipeline_path, project_root, status, input, parent_run_id, "
    "parent_step_id, workspace, options, created_at, updated_at, owner_pid, pipeline_text) "
    "VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
