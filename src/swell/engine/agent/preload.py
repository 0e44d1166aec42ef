"""What a run's prompt steps will need, started while earlier steps run.

The seam is the adapter registry: an adapter class may offer a classmethod
`preload(setup, model)` that starts loading what a request for `model` needs (the
`local` adapter loads its GGUF model in a background thread) and returns at once.
When a run starts, the runner asks every adapter its agent steps will use, once per
(adapter, model), through the registry; the engine never imports an adapter itself.
Which adapter and model a step uses follows `engine/agent/agents.py` (`choose_adapter`,
`choose_model`): `--adapter` > step > persona; the model as `engine/agent/tiers.py`
resolves a first attempt (a retry may escalate to a model not preloaded). A preload that cannot start
(unknown adapter, no model file) does nothing: the step reports it as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from swell.engine.agent import tiers

if TYPE_CHECKING:
    from swell.engine.visit.context import RunPlan, Services
    from swell.manifest.models import Step


def agent_models(plan: RunPlan, steps: Iterable[Step]) -> list[tuple[str, str | None]]:
    """(adapter name, model) of each step run by an agent, in order, without repeats."""
    manifest = plan.project.manifest
    found: list[tuple[str, str | None]] = []
    for step in steps:
        persona = manifest.personas.get(step.persona) if step.persona else None
        name = plan.options.adapter or step.adapter or (persona.adapter if persona else None)
        if not name:
            continue
        model = tiers.choose(
            manifest,
            name,
            cli=plan.options.model,
            step=step,
            persona_name=step.persona,
            persona=persona,
        )
        if (name, model) not in found:
            found.append((name, model))
    return found


def preload_adapters(plan: RunPlan, services: Services, steps: Iterable[Step]) -> list[str]:
    """Ask each adapter the steps will use to preload, if its class can; returns the
    adapters asked. Never raises: preloading only saves time."""
    manifest = plan.project.manifest
    asked: list[str] = []
    for name, model in agent_models(plan, steps):
        try:
            factory = services.adapters.get(manifest.adapter_type(name))
        except Exception:  # an unknown adapter is the step's error to report
            continue
        preload = getattr(factory, "preload", None)
        if not callable(preload):
            continue
        from swell.adapters.base import AdapterSetup  # only when an adapter can preload

        config = manifest.adapters.get(name)
        setup = AdapterSetup(
            name,
            config.binary if config else None,
            dict(config.options) if config else {},
            plan.project.root,
        )
        with contextlib.suppress(Exception):
            preload(setup, model)
            asked.append(name)
    return asked
