"""Wave's step-permission table (internal/pipeline/permissions_test.go), mirrored on
how swell merges a step's, its persona's and its adapter's tool lists before it
hands them to the agent CLI (engine/agent/agents.py). Case ids name the Wave test."""

from __future__ import annotations

from typing import Any

import pytest

from swell.engine.agent.agents import merged_permissions
from swell.manifest.models import AdapterConfig, Persona, Step

P = "pipeline/permissions_test.go:TestResolveStepPermissions/"


def _perms(allow: list[str] | None = None, deny: list[str] | None = None) -> dict[str, Any]:
    return {"allowed_tools": allow or [], "deny": deny or []}


ROWS: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], list[str], list[str]]] = [
    ("empty_step_inherits_persona_permissions", {}, _perms(["Read", "Glob", "Grep"]), {},
     ["Read", "Glob", "Grep"], []),
    ("step_adds_Write_to_read-only_persona", _perms(["Write", "Edit"]),
     _perms(["Read", "Glob", "Grep"]), {}, ["Write", "Edit", "Read", "Glob", "Grep"], []),
    ("step_deny_is_preserved_alongside_persona_deny", _perms(["Bash"], ["Bash(curl*)"]),
     _perms(["Read"], ["Bash(rm *)"]), {}, ["Bash", "Read"], ["Bash(curl*)", "Bash(rm *)"]),
    ("step_adds_tool_that_persona_explicitly_denies", _perms(["Write"]),
     _perms(["Read", "Glob", "Grep"], ["Write(*)"]), {}, ["Write", "Read", "Glob", "Grep"],
     ["Write(*)"]),
    ("adapter_defaults_fill_in_when_persona_and_step_are_silent", {}, {},
     _perms(["Read", "Glob"], ["Bash(sudo *)"]), ["Read", "Glob"], ["Bash(sudo *)"]),
    ("duplicate_patterns_across_layers_collapse,_first_wins", _perms(["Read", "Write"]),
     _perms(["Read", "Glob"]), _perms(["Read", "Grep"]), ["Read", "Write", "Glob", "Grep"], []),
    ("nil_adapterDef_is_safe", _perms(["Write"]), _perms(["Read"]), None, ["Write", "Read"], []),
    ("all-empty_resolves_to_zero-value_Permissions", {}, {}, {}, [], []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("step", "persona", "adapter", "allowed", "denied"),
    [r[1:] for r in ROWS],
    ids=[P + r[0] for r in ROWS],
)
def test_merged(
    step: dict[str, Any],
    persona: dict[str, Any],
    adapter: dict[str, Any] | None,
    allowed: list[str],
    denied: list[str],
) -> None:
    got = merged_permissions(
        Step.model_validate({"id": "scan", **({"permissions": step} if step else {})}),
        Persona.model_validate({"adapter": "claude", "permissions": persona}),
        None if adapter is None else AdapterConfig.model_validate({"default_permissions": adapter}),
    )
    assert got == (allowed, denied)


def test_without_a_persona() -> None:
    """P + nil_step_is_safe (here: a step whose agent has no persona): the step's own
    lists, then the adapter's."""
    step = Step.model_validate({"id": "s", "permissions": _perms(["Read"], ["Bash(*)"])})
    assert merged_permissions(step, None, None) == (["Read"], ["Bash(*)"])
