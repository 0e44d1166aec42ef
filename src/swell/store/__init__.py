"""Persistence behind one interface: runs, events, visits, artifacts, gates, context.

The store is an event sink: it commits every batch in one transaction and keeps
query tables (projections) of the events up to date in the same transaction.
Consumers depend on the narrow protocols in `swell.store.protocols`; backends (SQLite,
in-memory) are picked by `swell.store.location.open_store`.
"""
