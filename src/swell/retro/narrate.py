"""`--narrate PERSONA`: an agent reads a run's retro and writes a short summary.

The persona's adapter runs once with the retro's numbers in its prompt and no tools;
its answer is kept as the retro's `narrative`. The numbers are computed before and
never depend on it. Without a persona the built-in summarizer (the `local` adapter,
the embedded model) writes it, as it does thread summaries.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from swell.adapters.base import AdapterSetup, AgentRequest, AgentResult
from swell.adapters.registry import AdapterRegistry
from swell.errors import SwellError
from swell.manifest.models import Manifest
from swell.retro.models import Retro

BUILT_IN = "local"  # the embedded model, offline
TIMEOUT_S = 300.0
NO_TOOLS = ["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "WebFetch", "WebSearch"]
SYSTEM = (
    "You write short retrospectives of software pipeline runs for the people who run "
    "them. Use only the facts given. Say what went smoothly, where the run struggled "
    "and why, and one concrete thing to change. At most 120 words, plain text."
)
FACT_LINES = 60  # friction and loop lines given to the narrator at most


def prompt_of(retro: Retro) -> str:
    """The facts the narrator is given: the retro's numbers, friction and loops."""
    t = retro.totals
    lines = [
        f"Run {retro.run_id} of pipeline {retro.pipeline}: {retro.status}, "
        f"{retro.visits} visits, {retro.duration_ms or 0} ms.",
        f"Smoothness {retro.smoothness}/100 ({retro.rating}).",
        f"Tokens {t.tokens} (reviews {t.review_tokens_in + t.review_tokens_out}), "
        f"cost ${t.total_cost_usd:.4f}.",
        f"Reviews: {retro.reviews_passed} of {retro.reviews} passed.",
        "Friction points:",
    ]
    facts = [f"- {p.kind} at {p.step_id or '-'}: {p.detail}" for p in retro.friction]
    for loop in retro.loops:
        facts.append(f"- step {loop.step_id} was worked on {loop.visits} times:")
        facts += [
            f"  - {c.step_id}#{c.visit} ({c.reason}): {c.outcome or 'running'}"
            + (f"; led by: {c.driven_by}" if c.driven_by else "")
            + (f"; files: {', '.join(c.files)}" if c.files else "")
            for c in loop.changes
        ]
    lines += facts[:FACT_LINES] or ["- none"]
    return "\n".join(lines) + "\n\nWrite the retrospective."


def narrate(
    retro: Retro,
    manifest: Manifest,
    root: Path,
    adapters: AdapterRegistry,
    persona: str | None,
    model: str | None = None,
) -> str:
    """The narrative `persona` (None: the built-in summarizer) writes for `retro`;
    SwellError when the persona is unknown or its agent fails."""
    return asyncio.run(_narrate(retro, manifest, root, adapters, persona, model))


async def _narrate(
    retro: Retro,
    manifest: Manifest,
    root: Path,
    adapters: AdapterRegistry,
    persona_name: str | None,
    model: str | None,
) -> str:
    from swell.engine.agent.agents import agent_env, drive, system_prompt

    persona = manifest.personas.get(persona_name) if persona_name else None
    if persona_name and persona is None:
        known = ", ".join(sorted(manifest.personas)) or "none"
        raise SwellError(f"unknown persona '{persona_name}' (known: {known})")
    adapter_name = (persona.adapter if persona else None) or BUILT_IN
    config = manifest.adapters.get(adapter_name)
    setup = AdapterSetup(
        adapter_name,
        config.binary if config else None,
        dict(config.options) if config else {},
        root,
    )
    try:
        adapter = adapters.create(manifest.adapter_type(adapter_name), setup)
    except (SwellError, ValueError) as exc:
        raise SwellError(f"cannot narrate with adapter '{adapter_name}': {exc}") from None
    system = "\n\n".join(filter(None, [SYSTEM, system_prompt(root, persona)]))
    request = AgentRequest(
        prompt=prompt_of(retro),
        system_prompt=system,
        workspace=root,
        model=model or (persona.model if persona else None),
        denied_tools=NO_TOOLS,
        timeout_s=TIMEOUT_S,
        env=agent_env(tuple(getattr(adapter, "env_passthrough", ()))),
        run_id=retro.run_id,
        step_id="retro",
    )
    result: AgentResult | None = (await drive(adapter, request, None)).result
    who = persona_name or "the built-in summarizer"
    if result is None or not result.success:
        error = result.error if result is not None else "the agent ended without a result"
        raise SwellError(f"narration by {who} failed: {error}")
    return result.text.strip()
