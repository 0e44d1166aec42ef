"""Wave's model-routing tables (internal/pipeline/routing_test.go), mirrored on swell's
tiers (engine/tiers.py): which tier `routing.auto_route` gives a persona, how a retry
raises a tier, and which model a tier means. Case ids name the Wave test."""

from __future__ import annotations

import pytest

from swell.engine import tiers
from swell.manifest.models import AdapterConfig, Step
from swell.manifest.wave_models import RoutingConfig

R = "pipeline/routing_test.go:"
C = R + "TestClassifyStepComplexity/"
PERSONAS = [
    ("navigator", "cheapest"), ("summarizer", "cheapest"), ("auditor", "cheapest"),
    ("planner", "cheapest"), ("Senior-Navigator", "cheapest"),
    ("craftsman", "strongest"), ("implementer", "strongest"), ("debugger", "strongest"),
    ("researcher", "strongest"), ("supervisor", "strongest"), ("philosopher", "strongest"),
    ("provocateur", "strongest"), ("generic-persona", "balanced"),
]  # fmt: skip
PERSONA_IDS = [
    "navigator_persona_routes_to_cheapest", "summarizer_persona_routes_to_cheapest",
    "auditor_persona_routes_to_cheapest", "planner_persona_routes_to_cheapest",
    "persona_name_matching_is_case_insensitive", "craftsman_persona_routes_to_strongest",
    "implementer_persona_routes_to_strongest", "debugger_persona_routes_to_strongest",
    "researcher_persona_routes_to_strongest", "supervisor_persona_routes_to_strongest",
    "philosopher_persona_routes_to_strongest", "provocateur_persona_routes_to_strongest",
    "generic_step_and_persona_routes_to_balanced",
]  # fmt: skip


@pytest.mark.parametrize(("persona", "tier"), PERSONAS, ids=[C + i for i in PERSONA_IDS])
def test_classify(persona: str, tier: str) -> None:
    step = Step.model_validate({"id": "s", "persona": persona})
    assert tiers.classify(step, persona) == tier


def test_classify_without_a_step() -> None:
    """C:nil_step_with_generic_persona_routes_to_balanced"""
    assert tiers.classify(None, "generic-persona") == "balanced"


E = R + "TestEscalateTier/"
ESCALATE = [
    ("first_attempt_no_escalation_cheapest", "cheapest", 0, "cheapest"),
    ("first_attempt_no_escalation_balanced", "balanced", 0, "balanced"),
    ("first_attempt_no_escalation_strongest", "strongest", 0, "strongest"),
    ("one_retry_cheapest_->_balanced", "cheapest", 1, "balanced"),
    ("two_retries_cheapest_->_strongest", "cheapest", 2, "strongest"),
    ("three_retries_cheapest_stays_at_strongest", "cheapest", 3, "strongest"),
    ("one_retry_balanced_->_strongest", "balanced", 1, "strongest"),
    ("two_retries_balanced_stays_at_strongest", "balanced", 2, "strongest"),
    ("strongest_never_escalates", "strongest", 1, "strongest"),
    ("strongest_with_many_retries_stays_strongest", "strongest", 10, "strongest"),
    ("literal_model_name_not_escalated", "claude-opus-4", 1, "claude-opus-4"),
    ("literal_model_name_many_retries", "gpt-4o-mini", 5, "gpt-4o-mini"),
    ("empty_tier_returned_unchanged", "", 1, ""),
    ("negative_retries_treated_as_zero", "cheapest", -1, "cheapest"),
]


@pytest.mark.parametrize(
    ("tier", "retries", "raised"), [c[1:] for c in ESCALATE], ids=[E + c[0] for c in ESCALATE]
)
def test_escalate(tier: str, retries: int, raised: str) -> None:
    assert tiers.escalate(tier, retries) == raised


def test_cheaper_tier() -> None:
    """R:TestResolveModelWithAutoRouting (CheaperTier: a `--model` tier and a step
    tier give the cheaper; a literal model leaves the other)."""
    assert tiers.cheaper("strongest", "cheapest") == "cheapest"
    assert tiers.cheaper("balanced", "strongest") == "balanced"
    assert tiers.cheaper("claude-x", "balanced") == "balanced"
    assert tiers.cheaper("balanced", "claude-x") == "balanced"


M = R + "TestResolveModelForAttempt_Escalates/"
# swell's claude map (engine/tiers.py BUILTIN) where Wave's DefaultComplexityMap says
# claude-haiku-4-5 / "" (the CLI's default) / claude-opus-4: deliberate, docs/conformance.md
HAIKU, SONNET, OPUS = "claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-1"


@pytest.mark.parametrize(
    ("model", "attempt", "expected"),
    [
        ("cheapest", 1, HAIKU),
        ("cheapest", 2, SONNET),
        ("cheapest", 3, OPUS),
        ("strongest", 2, OPUS),
        ("claude-haiku-4-5", 3, "claude-haiku-4-5"),
    ],
    ids=[
        M + "cheapest_first_attempt",
        M + "cheapest_second_attempt_balanced",
        M + "cheapest_third_attempt_strongest",
        M + "strongest_stays",
        R + "TestResolveModelForAttempt_LiteralModelNotEscalated",
    ],
)
def test_a_retry_raises_the_tier(model: str, attempt: int, expected: str) -> None:
    assert tiers.resolve(model, "claude", None, RoutingConfig(), attempt) == expected


def test_balanced_is_the_adapter_s_default_model() -> None:
    """R:TestDefaultComplexityMap (balanced is ""): the adapter's `default_model` when it
    has one, as in Wave; swell's claude map where it has none."""
    config = AdapterConfig.model_validate({"default_model": "house-model"})
    assert tiers.resolve("balanced", "claude", config, RoutingConfig()) == "house-model"
    assert tiers.resolve("balanced", "claude", None, RoutingConfig()) == SONNET


def test_a_complexity_map_entry_wins_over_the_builtin_map() -> None:
    """R:TestRoutingConfigResolveComplexityModel: `routing.complexity_map` names the
    model; an empty entry means the adapter's default."""
    routing = RoutingConfig.model_validate({"complexity_map": {"strongest": "claude-opus-4"}})
    assert tiers.resolve("strongest", "claude", None, routing) == "claude-opus-4"
    empty = RoutingConfig.model_validate({"complexity_map": {"balanced": ""}})
    config = AdapterConfig.model_validate({"default_model": "house-model"})
    assert tiers.resolve("balanced", "claude", config, empty) == "house-model"
