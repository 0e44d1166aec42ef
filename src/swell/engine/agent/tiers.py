"""Model tiers: `cheapest`, `balanced` and `strongest` as a model name, resolved to the
name a CLI or API is given. Pure functions of the manifest's data; no I/O.

Which name a step asks for (`requested`): `--model` combined with the step's or
persona's model (two tiers give the cheaper), else the step's, else the persona's, else
a tier classified from the step when `routing.auto_route` is on, else the adapter's
`default_model`. A tier is raised one level per retry (`escalate`) unless the step sets
`retry.no_escalate`; a literal model never changes.

How a tier becomes a model (`resolve`), first match wins: the adapter's
`tier_models[tier]` (non-empty), then `runtime.routing.complexity_map[tier]` (an empty
value means the adapter's default), then `BUILTIN[adapter type][tier]`. A tier is never
passed on literally: with no mapping at all the adapter's own default is used (None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swell.manifest.models import AdapterConfig, Manifest, Persona, Step
    from swell.manifest.wave_models import RoutingConfig

TIERS: tuple[str, ...] = ("cheapest", "balanced", "strongest")  # cheapest first

# Each built-in adapter type's models per tier, current as of late 2025. These are
# defaults only: `tier_models` or `complexity_map` override them per project.
# opencode names are provider/model; `local` has one bundled model, so every tier is it.
BUILTIN: dict[str, dict[str, str]] = {
    "claude": {
        "cheapest": "claude-haiku-4-5",
        "balanced": "claude-sonnet-4-5",
        "strongest": "claude-opus-4-1",
    },
    "codex": {"cheapest": "gpt-5-mini", "balanced": "gpt-5-codex", "strongest": "gpt-5"},
    "openai": {"cheapest": "gpt-5-mini", "balanced": "gpt-5", "strongest": "gpt-5"},
    "gemini": {
        "cheapest": "gemini-2.5-flash-lite",
        "balanced": "gemini-2.5-flash",
        "strongest": "gemini-2.5-pro",
    },
    "opencode": {
        "cheapest": "anthropic/claude-haiku-4-5",
        "balanced": "anthropic/claude-sonnet-4-5",
        "strongest": "anthropic/claude-opus-4-1",
    },
    "local": dict.fromkeys(TIERS, "smollm2"),
    # the test double runs no model: it records the tier itself, so engine tests can
    # see which tier a visit got
    "scripted": {t: t for t in TIERS},
}

# Wave's auto_route heuristics (internal/pipeline/routing.go), by persona name
_CHEAP_PERSONAS = ("navigator", "summarizer", "auditor", "planner")
_STRONG_PERSONAS = (
    "craftsman", "implementer", "debugger", "researcher", "supervisor", "philosopher",
    "provocateur",
)  # fmt: skip


def is_tier(model: str | None) -> bool:
    """Whether `model` names a tier rather than a model."""
    return model in TIERS


def escalate(tier: str, retries: int) -> str:
    """`tier` raised by `retries` levels, capped at strongest; a literal is unchanged."""
    if not is_tier(tier) or retries <= 0:
        return tier
    return TIERS[min(TIERS.index(tier) + retries, len(TIERS) - 1)]


def cheaper(a: str, b: str) -> str:
    """The cheaper of two tiers; when one is a literal model, the other."""
    if not is_tier(a):
        return b
    if not is_tier(b):
        return a
    return a if TIERS.index(a) <= TIERS.index(b) else b


def classify(step: Step | None, persona_name: str | None) -> str:
    """The tier `routing.auto_route` gives an agent's step, by its persona's name:
    cheapest for light personas, strongest for heavy ones, else balanced. (Wave's rules
    also give command steps the cheapest tier and sub-pipelines the strongest; those
    run no model, so only the persona rules can apply.)"""
    name = (persona_name or "").lower()
    if any(word in name for word in _CHEAP_PERSONAS):
        return "cheapest"
    if any(word in name for word in _STRONG_PERSONAS):
        return "strongest"
    return "balanced"


def requested(
    cli: str | None,
    step_model: str | None,
    persona_model: str | None,
    auto: str | None = None,
    default_model: str | None = None,
) -> str | None:
    """The model or tier asked for, before tiers are resolved. `--model` wins, except
    that a `--model` tier and a step or persona tier give the cheaper of the two;
    `auto` is the auto_route tier, if on."""
    own = step_model or persona_model
    if cli:
        return cheaper(cli, own) if is_tier(cli) and is_tier(own) and own else cli
    return own or auto or default_model


def resolve(
    model: str | None,
    adapter_type: str,
    config: AdapterConfig | None,
    routing: RoutingConfig | None,
    attempt: int = 1,
) -> str | None:
    """The model name to give the adapter for `model` (a tier or a literal) on attempt
    `attempt` (1 = first; each later attempt raises a tier one level). None means the
    adapter's own default. Literals are returned unchanged."""
    if model is None or not is_tier(model):
        return model
    default = config.default_model if config else None
    tier = escalate(model, attempt - 1)
    mapped = _lookup(tier, adapter_type, config, routing)
    if mapped is not None:
        return mapped or _default(adapter_type, config, routing)
    if tier == "balanced" and default and not is_tier(default):
        return default  # Wave: balanced means the adapter's default model
    return BUILTIN.get(adapter_type, {}).get(tier)


def _lookup(
    tier: str, adapter_type: str, config: AdapterConfig | None, routing: RoutingConfig | None
) -> str | None:
    """`tier_models`, then `complexity_map` ("" there means the adapter's default)."""
    if config and config.tier_models.get(tier):
        return config.tier_models[tier]
    if routing is not None and tier in routing.complexity_map:
        return routing.complexity_map[tier]
    return None


def _default(
    adapter_type: str, config: AdapterConfig | None, routing: RoutingConfig | None
) -> str | None:
    """The adapter's default model, itself resolved when it is a tier; a tier mapped to
    "" again gives the built-in map rather than looping."""
    default = config.default_model if config else None
    if default is None or not is_tier(default):
        return default
    if config and config.tier_models.get(default):
        return config.tier_models[default]
    return BUILTIN.get(adapter_type, {}).get(default)


def choose(
    manifest: Manifest,
    adapter: str,
    *,
    cli: str | None,
    step: Step | None,
    persona_name: str | None,
    persona: Persona | None,
    attempt: int = 1,
) -> str | None:
    """The model a step (or a persona alone, when `step` is None) runs on through
    adapter `adapter`, on attempt `attempt`: `requested` then `resolve`. A retry
    escalates unless the step's `retry.no_escalate` is set."""
    config = manifest.adapters.get(adapter)
    routing = manifest.runtime.routing
    auto = classify(step, persona_name) if routing.auto_route else None
    model = requested(
        cli,
        step.model if step else None,
        persona.model if persona else None,
        auto,
        config.default_model if config else None,
    )
    if step is not None and step.retry is not None and step.retry.no_escalate:
        attempt = 1
    return resolve(model, manifest.adapter_type(adapter), config, routing, attempt)


__all__ = ["BUILTIN", "TIERS", "cheaper", "choose", "classify", "escalate", "is_tier"]
__all__ += ["requested", "resolve"]
