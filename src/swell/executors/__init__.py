"""Who drives a run's loop: in-process (engine/runner.py) or a Temporal workflow (temporal/)."""
