"""The embedded SQLite backend: one file in WAL mode (`store.SqliteStore`), its numbered
migrations, compact event keys, WAL checkpoints, run claims held as kernel locks on the
database file, paged queries for the dashboard, and the translation of `sqlite3` errors.

Nothing outside this package imports its modules except `store.location` (which opens
a store) and tools that inspect a SQLite file (`swell doctor`).
"""
