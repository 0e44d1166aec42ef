"""Retrospectives and analytics computed from the store: one run's smoothness,
friction and loops (`run.py`), numbers over many runs (`stats.py`), an optional
written summary by an agent (`narrate.py`), and the retro kept after each run
(`record.py`, `runtime.retros`). Reads only through the store's reader protocols."""
