"""The auto twin's wire formats: one module per model protocol.

Each module reads a request body into a `Conversation` (`read`) and puts the decision
core's `Move` into that protocol's `Reply` (`reply`), in the tool names and shapes of
the CLI that speaks it. The decision itself is twins/auto.py's, the same for all.
"""
