"""Waiting for a run's next events: what `swell logs --follow` sleeps on.

Postgres wakes a waiter when events commit (LISTEN/NOTIFY, `postgres/store.py`); SQLite and
the in-memory store have no such signal across processes, so they poll the run's last
seq here, a few times a second.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swell.store.protocols import RunReader

POLL = 0.05  # seconds between looks


def poll_for_events(reader: RunReader, run_id: str, after_seq: int, timeout: float) -> bool:
    """True once the run has an event after `after_seq`, False when `timeout` seconds
    pass first (or there is no such run)."""
    from swell.errors import RunNotFound

    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        try:
            if reader.get_run(run_id).last_seq > after_seq:
                return True
        except RunNotFound:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(POLL, remaining))
