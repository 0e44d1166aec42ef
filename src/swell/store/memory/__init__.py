"""The in-memory backend: `MemoryStore` handles on a `MemoryDatabase` (tables.py holds
the database, its journal and its fold of events), for an in-process test harness and
users' own tests."""

from swell.store.memory.store import MemoryStore
from swell.store.memory.tables import MemoryDatabase

__all__ = ["MemoryDatabase", "MemoryStore"]
