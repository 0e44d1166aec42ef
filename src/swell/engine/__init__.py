"""The run loop: scheduling, edges and conditions, visit limits, the circuit breaker, resume.

The engine never imports the store, the web app, the CLI or a concrete adapter:
it emits typed events to a sink and gets everything else through `Services`.
"""
