"""Contracts: checks at every step boundary. Mechanical ones (test suites, JSON schema,
non-empty files) and an independent agent reviewer whose structured feedback drives
rework. One module per contract type, registered by its `type`."""
