"""Typed run events: one pydantic model per kind, NDJSON serialisation, and fan-out.

Events are the record of a run. The store persists them (and derives its tables
from them), live views print them, and `swell resume` rebuilds a run's state by
replaying them.
"""
