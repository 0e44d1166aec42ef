"""Relay: when an agent's context fills past a threshold mid-step, a summarizer writes a
checkpoint and a fresh instance of the same persona carries on from it."""
