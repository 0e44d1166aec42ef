"""Model tiers (engine/agent/tiers.py): which name is asked for, how a tier becomes a model,
and how a retry escalates it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from manifest_helpers import ProjectDir, at, make_project

from swell.engine.agent import tiers
from swell.manifest.models import AdapterConfig, Manifest, Step
from swell.manifest.wave_models import RoutingConfig


def _adapter(**fields: Any) -> AdapterConfig:
    return AdapterConfig.model_validate(fields)


def _routing(**fields: Any) -> RoutingConfig:
    return RoutingConfig.model_validate(fields)


def test_tier_models_win_then_complexity_map_then_the_builtin_map() -> None:
    both = _adapter(tier_models={"cheapest": "from-adapter"})
    routing = _routing(complexity_map={"cheapest": "from-routing", "strongest": "big"})
    assert tiers.resolve("cheapest", "claude", both, routing) == "from-adapter"
    assert tiers.resolve("strongest", "claude", both, routing) == "big"
    assert tiers.resolve("cheapest", "claude", _adapter(), routing) == "from-routing"
    assert tiers.resolve("cheapest", "claude", _adapter(), _routing()) == "claude-haiku-4-5"
    # an empty tier_models entry does not count; an empty complexity_map entry means
    # the adapter's default model
    empty = _adapter(tier_models={"cheapest": ""}, default_model="house")
    assert tiers.resolve("cheapest", "claude", empty, _routing()) == "claude-haiku-4-5"
    mapped_empty = _routing(complexity_map={"cheapest": ""})
    assert tiers.resolve("cheapest", "claude", empty, mapped_empty) == "house"
    assert tiers.resolve("cheapest", "claude", None, mapped_empty) is None


def test_every_builtin_adapter_type_maps_every_tier_and_local_to_its_bundled_model() -> None:
    for kind in ("claude", "codex", "gemini", "opencode", "openai", "local"):
        names = [tiers.resolve(t, kind, None, None) for t in tiers.TIERS]
        assert all(n and n not in tiers.TIERS for n in names), (kind, names)
    assert {tiers.resolve(t, "local", None, None) for t in tiers.TIERS} == {"smollm2"}
    assert tiers.resolve("strongest", "gemini", None, None) == "gemini-2.5-pro"


def test_a_tier_is_never_passed_on_literally() -> None:
    # an adapter type with no built-in map and no mapping: the adapter's own default
    assert tiers.resolve("strongest", "a-plugin", None, None) is None
    assert tiers.resolve("strongest", "a-plugin", _adapter(default_model="d"), None) is None
    # Wave: balanced with nothing configured is the adapter's default model
    assert tiers.resolve("balanced", "claude", _adapter(default_model="mine"), None) == "mine"


def test_literals_pass_through_and_never_escalate() -> None:
    assert tiers.resolve("gpt-test", "openai", None, None, attempt=3) == "gpt-test"
    assert tiers.resolve(None, "openai", None, None) is None


def test_escalation_raises_one_tier_per_retry_capped_at_strongest() -> None:
    assert [tiers.escalate("cheapest", n) for n in range(4)] == [
        "cheapest",
        "balanced",
        "strongest",
        "strongest",
    ]
    mapped = _adapter(tier_models={"cheapest": "c", "balanced": "b", "strongest": "s"})
    assert [tiers.resolve("cheapest", "claude", mapped, None, a) for a in (1, 2, 3, 9)] == [
        "c",
        "b",
        "s",
        "s",
    ]


def test_cli_model_beats_step_and_persona_but_two_tiers_give_the_cheaper() -> None:
    assert tiers.requested("strongest", "cheapest", None) == "cheapest"
    assert tiers.requested("cheapest", None, "strongest") == "cheapest"
    assert tiers.requested("balanced", "literal-model", None) == "balanced"
    assert tiers.requested("literal", "cheapest", None) == "literal"
    assert tiers.requested(None, "step", "persona", "balanced", "default") == "step"
    assert tiers.requested(None, None, "persona", "balanced", "default") == "persona"
    assert tiers.requested(None, None, None, "balanced", "default") == "balanced"
    assert tiers.requested(None, None, None, None, "default") == "default"


def test_auto_route_classifies_by_persona_name() -> None:
    def step(**fields: Any) -> Step:
        return Step.model_validate({"id": "s", **fields})

    assert tiers.classify(step(), "code-navigator") == "cheapest"
    assert tiers.classify(step(), "Lead-Implementer") == "strongest"
    assert tiers.classify(step(), "coder") == "balanced"


def _manifest(**routing: Any) -> Manifest:
    return Manifest.model_validate(
        {
            "kind": "WaveManifest",
            "adapters": {"claude": {"tier_models": {"balanced": "sonnet-x"}}},
            "personas": {"lead-implementer": {"adapter": "claude"}},
            "runtime": {"routing": routing},
        }
    )


def test_choose_uses_auto_route_and_no_escalate() -> None:
    plain = Step.model_validate({"id": "s", "persona": "lead-implementer"})
    auto = _manifest(auto_route=True)
    persona = auto.personas["lead-implementer"]
    kw: dict[str, Any] = {"cli": None, "persona_name": "lead-implementer", "persona": persona}
    assert tiers.choose(auto, "claude", step=plain, **kw) == "claude-opus-4-1"
    assert tiers.choose(_manifest(), "claude", step=plain, **kw) is None  # adapter default
    cheap = Step.model_validate({"id": "s", "model": "cheapest"})
    assert tiers.choose(auto, "claude", step=cheap, attempt=2, **kw) == "sonnet-x"
    pinned = Step.model_validate(
        {"id": "s", "model": "cheapest", "retry": {"max_attempts": 3, "no_escalate": True}}
    )
    assert tiers.choose(auto, "claude", step=pinned, attempt=2, **kw) == "claude-haiku-4-5"


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    return make_project(tmp_path, monkeypatch)


def test_lint_no_longer_calls_tier_fields_unrun(proj: ProjectDir) -> None:
    proj.manifest(
        """\
        kind: WaveManifest
        adapters:
          claude: {}
        personas:
          dev: {adapter: claude}
        runtime:
          routing: {auto_route: true, complexity_map: {cheapest: small}, default_tier: balanced}
        """
    )
    proj.pipeline(
        """\
        kind: WavePipeline
        steps:
          - id: a
            persona: dev
            model: cheapest
            retry: {max_attempts: 2, no_escalate: true}
            exec: {type: prompt, source: hi}
        """
    )
    warnings = [m for _, _, m in at(proj.lint(), "warning")]
    for name in ("auto_route", "complexity_map", "no_escalate"):
        assert not any(f"`{name}`" in w for w in warnings), warnings
    assert any("swell does not run `default_tier`" in w for w in warnings)  # Wave ignores it too
