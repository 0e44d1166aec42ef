"""`adapter: parrot`: an agent adapter from a plugin. It answers every prompt with its
last line, after the `prefix` its options set; no tools, no sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator

from pydantic import BaseModel, ConfigDict

from swell.api import (
    AdapterSetup,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentText,
    AgentUsageUpdate,
    Capabilities,
    Usage,
)


class ParrotOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prefix: str = "squawk"


class Parrot:
    Options = ParrotOptions  # `swell validate` checks `adapters.NAME.options` with it
    capabilities = Capabilities()
    env_passthrough: tuple[str, ...] = ()

    def __init__(self, setup: AdapterSetup) -> None:
        self.name = setup.name
        self.options = ParrotOptions.model_validate(setup.options)

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        lines = request.prompt.strip().splitlines() or [""]
        text = f"{self.options.prefix}: {lines[-1]}"
        usage = Usage(input_tokens=len(request.prompt.split()), output_tokens=len(text.split()))
        yield AgentText(text)
        yield AgentUsageUpdate(usage)
        yield AgentFinished(AgentResult(success=True, text=text, usage=usage))
