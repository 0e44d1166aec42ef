"""Fake model servers ("twins") on 127.0.0.1 that real agent CLIs talk to in tests.

`server.Twin` is the HTTP server: it records every request and answers model
calls from a script of `Reply` objects. Each wire protocol (Anthropic Messages,
OpenAI Chat Completions, OpenAI Responses, ...) is one module in this package with
a `ROUTES` list; a test names the protocols its twin speaks.
"""
