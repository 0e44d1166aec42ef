"""The run loop: the graph, the run's state (a fold of its events), the pure
decisions and policies, limits, cost, the one RunLoop every driver runs, and the
local asyncio driver (runner.py). No clock or I/O in the loop itself."""
