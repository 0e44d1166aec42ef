"""`scratch:NAME`: a store backend from a plugin. Runs are kept in this process's
memory, one database a NAME that every handle opened on it shares, gone when the
process ends: a store for a test harness that opens it by location. Built on swell's
in-memory tables; it declares what they do beyond the required `Store` (kept output,
claims within the process, dispatch keys)."""

from __future__ import annotations

from swell.api import Capability, MemoryDatabase, MemoryStore, Store, StoreError

_DATABASES: dict[str, MemoryDatabase] = {}


class ScratchStore(MemoryStore):
    capabilities = frozenset({Capability.OUTPUT, Capability.CLAIMS, Capability.DISPATCH})

    def __init__(self, name: str) -> None:
        super().__init__(_DATABASES.setdefault(name, MemoryDatabase()))
        self.identity = f"scratch:{name}"


def open_store(location: str) -> Store:
    """The entry point: `scratch:NAME` (all of the location is given)."""
    name = location.partition(":")[2]
    if not name:
        raise StoreError(f"a scratch store needs a name: scratch:NAME, not '{location}'")
    return ScratchStore(name)
