"""Who executes a run: the Executor seam the CLI and the dashboard use (base.py), the
in-process executor (local.py) and the Temporal one (temporal/)."""
