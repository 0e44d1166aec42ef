"""Agent adapters: the AgentAdapter protocol, the registry, and one module per agent.

Adapters know nothing of the engine: they take an `AgentRequest`, yield `AgentEvent`s
while the agent works, and end with `AgentFinished` carrying the `AgentResult`.
"""
