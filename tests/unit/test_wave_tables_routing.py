"""Wave's routing tables (internal/pipeline/routing_test.go, condition_test.go,
retry_test.go), mirrored on swell's tiers, edge conditions and retry timing: which
tier `routing.auto_route` gives a persona, how a retry raises a tier and which model
a tier means; how an edge condition reads and holds; how long a retry waits. Case ids
name the Wave test."""

from __future__ import annotations

from typing import Any

import pytest

from swell.engine.agent import tiers
from swell.engine.loop import retry
from swell.manifest.conditions import ConditionError, parse_condition
from swell.manifest.models import AdapterConfig, Manifest, Retry, Step
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
# swell's claude map (engine/agent/tiers.py BUILTIN) where Wave's DefaultComplexityMap says
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


# ------------------------------------------------------------------- condition_test.go
P = "pipeline/condition_test.go:"
PARSE_OK = [
    ("empty_string_is_unconditional", "", "failure", {}, True),
    ("outcome=success", "outcome=success", "success", {}, True),
    ("outcome=failure", "outcome=failure", "failure", {}, True),
    ("context_key-value_with_boolean", "context.tests_passed=true", "success",
     {"tests_passed": "true"}, True),
    ("context_key-value_with_number", "context.count=5", "success", {"count": "5"}, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "outcome", "context", "holds"),
    [c[1:] for c in PARSE_OK],
    ids=[P + "TestParseCondition/" + c[0] for c in PARSE_OK],
)
def test_parse_condition(text: str, outcome: str, context: dict[str, str], holds: bool) -> None:
    assert parse_condition(text).holds(outcome, context) is holds


@pytest.mark.parametrize(
    "text",
    ["outcome=invalid", "invalid", "=value", "key=", "unknown=value", "context.=value"],
    ids=[
        P + "TestParseCondition/" + i
        for i in (
            "outcome_with_invalid_value",
            "missing_equals_operator",
            "empty_left-hand_side",
            "empty_right-hand_side",
            "unknown_namespace",
            "empty_context_key",
        )
    ],
)
def test_parse_condition_refuses(text: str) -> None:
    with pytest.raises(ConditionError):
        parse_condition(text)


EVAL = [
    ("unconditional_always_matches", None, "failure", {}, True),
    ("outcome=success_matches_success", "outcome=success", "success", {}, True),
    ("outcome=success_does_not_match_failure", "outcome=success", "failure", {}, False),
    ("context_key-value_matches", "context.tests_passed=true", "success",
     {"tests_passed": "true"}, True),
    ("context_key-value_does_not_match_different_value", "context.tests_passed=true",
     "success", {"tests_passed": "false"}, False),
    ("context_key-value_does_not_match_missing_key", "context.tests_passed=true", "success",
     {}, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "outcome", "context", "holds"),
    [c[1:] for c in EVAL],
    ids=[P + "TestEvaluateCondition/" + c[0] for c in EVAL],
)
def test_evaluate_condition(
    text: str | None, outcome: str, context: dict[str, str], holds: bool
) -> None:
    assert parse_condition(text).holds(outcome, context) is holds


# ------------------------------------------------------------------------ retry_test.go
Y = "pipeline/retry_test.go:"


def _retry(**fields: object) -> Retry:
    return Retry.model_validate(fields)


@pytest.mark.parametrize(
    ("fields", "attempts"),
    [({}, 1), ({"max_attempts": 3}, 3), ({"policy": "standard", "max_attempts": 10}, 10)],
    ids=[
        Y + "TestRetryConfig_EffectiveMaxAttempts/default_returns_1",
        Y + "TestRetryConfig_EffectiveMaxAttempts/explicit_value",
        Y + "TestRetryConfig_ResolvePolicy_ExplicitOverride",
    ],
)
def test_max_attempts(fields: dict[str, object], attempts: int) -> None:
    assert retry.max_attempts(_retry(**fields)) == attempts


D = Y + "TestRetryConfig_ComputeDelay/"
# Wave's ComputeDelay(k) is the wait before attempt k (executor_steps.go sleeps it
# before attempts 2, 3, ...); swell's delay_before(retry, k) the same
DELAYS = [
    ("linear_default_attempt_3", {}, 3, 3.0),
    ("linear_with_custom_base", {"backoff": "linear", "base_delay": "2s"}, 2, 4.0),
    ("fixed_backoff_attempt_3", {"backoff": "fixed", "base_delay": "5s"}, 3, 5.0),
    ("exponential_attempt_2", {"backoff": "exponential", "base_delay": "1s"}, 2, 2.0),
    ("exponential_attempt_3", {"backoff": "exponential", "base_delay": "1s"}, 3, 4.0),
    ("exponential_attempt_4", {"backoff": "exponential", "base_delay": "1s"}, 4, 8.0),
    ("exponential_caps_at_60s", {"backoff": "exponential", "base_delay": "10s"}, 5, 60.0),
    ("exponential_with_large_attempt_caps_at_60s", {"backoff": "exponential",
     "base_delay": "1s"}, 10, 60.0),
    ("custom_max_delay_caps_exponential", {"backoff": "exponential", "base_delay": "1s",
     "max_delay": "5s"}, 10, 5.0),
    ("custom_max_delay_caps_linear", {"backoff": "linear", "base_delay": "2s",
     "max_delay": "8s"}, 10, 8.0),
    ("custom_max_delay_caps_fixed_(no-op_when_base_<_max)", {"backoff": "fixed",
     "base_delay": "3s", "max_delay": "10s"}, 5, 3.0),
    ("custom_max_delay_caps_fixed_(base_>_max)", {"backoff": "fixed", "base_delay": "15s",
     "max_delay": "10s"}, 2, 10.0),
    ("(ParseBaseDelay)_valid_millisecond_duration", {"backoff": "fixed",
     "base_delay": "500ms"}, 2, 0.5),
    ("(ParseMaxDelay)_valid_minute_duration", {"backoff": "fixed", "base_delay": "5m",
     "max_delay": "2m"}, 2, 120.0),
    ("(ResolvePolicy_Standard)", {"policy": "standard"}, 3, 4.0),
    ("(ResolvePolicy_None)", {"policy": "none"}, 2, 0.0),
    ("(ResolvePolicy_Aggressive)", {"policy": "aggressive"}, 2, 0.4),
    ("(ResolvePolicy_Patient)", {"policy": "patient"}, 5, 80.0),
    ("(ResolvePolicy_EmptyPolicy)", {}, 2, 2.0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "attempt", "seconds"), [c[1:] for c in DELAYS], ids=[D + c[0] for c in DELAYS]
)
def test_delay(fields: dict[str, object], attempt: int, seconds: float) -> None:
    assert retry.delay_before(_retry(**fields), attempt) == pytest.approx(seconds)


def test_policies_set_attempts() -> None:
    """Y:TestRetryConfig_ResolvePolicy_{Standard,None,Aggressive,Patient}: max attempts."""
    counts = {p: retry.max_attempts(_retry(policy=p)) for p in retry.PRESETS}
    assert counts == {"none": 1, "standard": 3, "aggressive": 5, "patient": 3}


AR = R + "TestResolveModelWithAutoRouting/"


def _choose(
    *,
    cli: str | None = None,
    step_model: str | None = None,
    persona_model: str | None = None,
    persona: str = "navigator",
    routing: dict[str, object] | None = None,
) -> str | None:
    manifest = Manifest.model_validate(
        {
            "kind": "WaveManifest",
            "adapters": {"claude": {}},
            "personas": {persona: {"adapter": "claude", "model": persona_model}},
            "runtime": {"routing": routing if routing is not None else {"auto_route": True}},
        }
    )
    step = Step.model_validate({"id": "s", "persona": persona, "model": step_model})
    return tiers.choose(
        manifest,
        "claude",
        cli=cli,
        step=step,
        persona_name=persona,
        persona=manifest.personas[persona],
    )


CHOICES: list[tuple[str, dict[str, object], str | None]] = [
    ("CLI_override_wins_over_auto-routing", {"cli": "cli-model"}, "cli-model"),
    ("step_model_wins_over_auto-routing", {"step_model": "step-model"}, "step-model"),
    ("persona_model_wins_over_auto-routing", {"persona_model": "persona-model"},
     "persona-model"),
    ("auto-routing_selects_haiku_for_navigator_persona", {}, HAIKU),
    ("auto-routing_selects_opus_for_craftsman_persona", {"persona": "craftsman"}, OPUS),
    ("auto-routing_returns_the_adapter_default_for_balanced(deliberate_map)",
     {"persona": "generic-persona"}, SONNET),
    ("auto-routing_disabled_returns_empty", {"routing": {"auto_route": False}}, None),
    ("nil_routing_returns_empty", {"routing": {}}, None),
    ("custom_complexity_map_overrides_defaults",
     {"routing": {"auto_route": True, "complexity_map": {"cheapest": "custom-haiku"}}},
     "custom-haiku"),
    ("custom_complexity_map_falls_back_to_defaults_for_unmapped_tiers",
     {"persona": "craftsman",
      "routing": {"auto_route": True, "complexity_map": {"cheapest": "custom-haiku"}}}, OPUS),
    ("step_model_as_tier_name_cheapest", {"step_model": "cheapest", "persona": "any"}, HAIKU),
    ("step_model_as_tier_name_strongest", {"step_model": "strongest", "persona": "any"}, OPUS),
    ("step_model_as_tier_name_balanced(deliberate_map)",
     {"step_model": "balanced", "persona": "any"}, SONNET),
    ("persona_model_as_tier_name_cheapest", {"persona_model": "cheapest", "persona": "any"},
     HAIKU),
    ("step_explicit_model_passes_through_unchanged", {"step_model": "my-custom-model"},
     "my-custom-model"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("asked", "model"), [c[1:] for c in CHOICES], ids=[AR + c[0] for c in CHOICES]
)
def test_auto_route(asked: dict[str, Any], model: str | None) -> None:
    assert _choose(**asked) == model
