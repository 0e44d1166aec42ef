"""The store conformance suite: one set of tests, run against every backend."""
