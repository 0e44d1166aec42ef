"""Wave's fields in swell's models and lint: accepted with Wave's meaning, checked, and
a named warning for each one swell does not run yet; partial validation keeps the
rest of a file checkable."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from manifest_helpers import LINT_CONTEXT, ProjectDir, at, make_project

from swell.contracts.base import ContractSettings, ContractType
from swell.contracts.registry import default_contract_types
from swell.errors import ManifestError
from swell.manifest.loader import load_pipeline, load_project
from swell.manifest.models import Manifest, Pipeline
from swell.manifest.validation import validate_project


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    return make_project(tmp_path, monkeypatch)


def test_project_values_of_any_yaml_type(proj: ProjectDir) -> None:
    proj.manifest(
        "kind: WaveManifest\nproject:\n  test_file_pattern: ['*_test.go']\n"
        "  services: {api: {path: api}}\n  retries: 3\n"
    )
    project = load_project(proj.root)
    assert project.manifest.project["test_file_pattern"] == ["*_test.go"]
    assert project.manifest.project["services"] == {"api": {"path": "api"}}


def test_opencode_family_adapters_resolve_to_opencode() -> None:
    m = Manifest.model_validate(
        {"kind": "WaveManifest", "adapters": {"opencode-glm": {"binary": "oc"}, "claude": {}}}
    )
    assert m.adapter_type("opencode-glm") == "opencode"
    assert m.adapter_type("claude") == "claude"
    assert m.adapter_type("opencodex") == "opencodex"  # only the `opencode-` family


@pytest.mark.parametrize(
    ("scope", "ok"),
    [("issues:read", True), ("pulls:write@GH_TOKEN", True), ("pulls:own", False), ("x", False)],
)
def test_token_scopes_are_checked(scope: str, ok: bool) -> None:
    data = {"kind": "WaveManifest", "personas": {"p": {"adapter": "a", "token_scopes": [scope]}}}
    if ok:
        Manifest.model_validate(data)
    else:
        with pytest.raises(ValueError, match="RESOURCE:LEVEL"):
            Manifest.model_validate(data)


def test_runtime_cost_routing_and_stall_timeout_are_typed(proj: ProjectDir) -> None:
    proj.manifest(
        """\
        kind: WaveManifest
        adapters:
          claude: {tier_models: {fastest: x}}
        runtime:
          stall_timeout: ten minutes
          cost: {budget_ceiling: -1}
          routing: {complexity_map: {cheap: m}}
        """.replace("        ", "")
    )
    with pytest.raises(ManifestError) as info:
        load_project(proj.root)
    messages = " | ".join(m for _, _, m in at(info.value.problems))
    assert "unknown tier(s) fastest" in messages
    assert "must be a duration" in messages
    assert "'budget_ceiling'" in messages
    assert "'complexity_map'" in messages


def test_branch_on_is_read_as_wave_reads_it() -> None:
    # YAML 1.1 reads the key `on` as true; Wave (YAML 1.2) reads "on"
    step = {"id": "b", "branch": {"True": "{{ input }}", "cases": {"x": "p"}}}
    pipeline = Pipeline.model_validate({"kind": "WavePipeline", "steps": [step]})
    assert pipeline.steps[0].branch is not None and pipeline.steps[0].branch.on == "{{ input }}"
    assert pipeline.steps[0].kind == "branch"


def test_outcomes_need_a_json_path_except_files() -> None:
    base = {"kind": "WavePipeline"}
    ok = {"id": "a", "script": "x", "outcomes": [{"type": "file", "extract_from": "f"}]}
    Pipeline.model_validate({**base, "steps": [ok]})
    bad = {"id": "a", "script": "x", "outcomes": [{"type": "pr", "extract_from": "f"}]}
    with pytest.raises(ValueError, match="needs `json_path`"):
        Pipeline.model_validate({**base, "steps": [bad]})


def test_a_removed_list_item_does_not_shift_later_problems(proj: ProjectDir) -> None:
    # step 2 has no id and is left out; step 3's problems must still point at step 3
    proj.pipeline(
        """\
        kind: WavePipeline
        steps:
          - id: a
            script: echo
          - script: echo
          - id: c
            dependencies: [nope]
            script: echo
        """.replace("        ", "")
    )
    result = validate_project(proj.root, LINT_CONTEXT, "p")
    assert [(p.line, p.col) for p in result.errors] == [(5, 5), (7, 20)]
    assert "missing required field 'id'" in result.errors[0].message
    assert "unknown dependency 'nope'" in result.errors[1].message


def test_not_run_fields_warn_and_composition_steps_are_kinds(proj: ProjectDir) -> None:
    proj.pipeline(
        """\
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            validation: [{type: schema}]
          - id: agg
            dependencies: [a]
            aggregate: {from: "{{ a.output }}", into: out.json, strategy: concat}
        """.replace("        ", "")
    )
    loaded = load_pipeline(proj.root, "p")
    assert loaded.pipeline.steps[1].kind == "aggregate"
    warnings = [m for _, _, m in at(proj.lint(), "warning")]
    assert any("swell does not run `validation`" in w for w in warnings)
    # composition steps run (docs/composition.md): neither they nor step outputs warn
    assert not any("`aggregate`" in w or "a.output" in w for w in warnings)


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{{ forge.cli_tool }}", None),
        ("{{ forge.cli_tol }}", "did you mean 'cli_tool'"),
        ("{{ gate.approve.choice }}", None),
        ("{{ gate.aprove.choice }}", "did you mean 'approve'"),
        ("{{ deps.a.plan }}", None),
        ("{{ deps.a.pla }}", "did you mean 'plan'"),
        ("{{ artifacts.a.plan }}", None),
        ("{{ env.profile }}", None),
        ("{{ a.out.plan }}", "rendered only in composition fields"),
        ("{{ item }}", "only in an `iterate` step"),
    ],
)
def test_wave_template_namespaces(proj: ProjectDir, template: str, problem: str | None) -> None:
    proj.pipeline(
        f"""\
        kind: WavePipeline
        steps:
          - id: a
            script: echo > plan.md
            output_artifacts: [{{name: plan, path: plan.md}}]
          - id: approve
            dependencies: [a]
            gate: {{type: approval, auto: true}}
          - id: b
            dependencies: [approve, a]
            persona: dev
            exec: {{source: "x {template}"}}
        """.replace("        ", "")
    )
    errors = [m for _, _, m in at(proj.lint())]
    if problem is None:
        assert errors == []
    else:
        assert len(errors) == 1 and problem in errors[0], errors


def test_fields_swell_does_not_run_are_warnings_naming_them(proj: ProjectDir) -> None:
    proj.manifest(
        """\
        kind: WaveManifest
        adapters: {claude: {mode: headless, output_format: json, project_files: [x]}}
        personas: {dev: {adapter: claude}}
        runtime:
          audit: {log_all_tool_calls: true}
          timeouts: {gate_approval_hours: 24, stdout_drain_seconds: 1, git_command_seconds: 30}
          meta_pipeline: {max_depth: 2}
        """
    )
    proj.pipeline(
        """\
        kind: WavePipeline
        metadata: {name: p, release: true, disabled: true}
        requires:
          skills: {speckit: {check: "true", init: "speckit init"}}
        steps:
          - id: a
            script: echo
            output_artifacts: [{name: r, path: r.json}]
          - id: b
            script: echo
            dependencies: [a]
            memory:
              inject_artifacts: [{step: a, artifact: r, as: r, schema_path: s.json}]
            handover:
              contract: {type: non_empty_file, source: r.json, max_retries: 2, validate: true}
        """
    )
    warnings = [(line, m) for line, _, m in at(proj.lint(), "warning")]
    # the ignored ones (an adapter's mode, output_format and project_files, timeouts Wave
    # does not read, meta_pipeline, release, a contract's validate) say nothing
    assert warnings == [
        (5, "swell does not run `audit` (audit trace files) yet; it is ignored"),
        (
            6,
            "swell does not run `gate_approval_hours` (a default timeout for approval gates) "
            "yet; it is ignored",
        ),
        (2, "swell does not run `disabled` (disabling a pipeline) yet; it is ignored"),
        (4, "swell does not run `init` (skill init commands) yet; it is ignored"),
        (
            13,
            "swell does not run `schema_path` (checking an injected artifact against a "
            "schema) yet; it is ignored",
        ),
        (15, "swell does not run `max_retries` (a contract's own retry limit) yet; it is ignored"),
    ]


def test_a_field_wave_refuses_is_refused(proj: ProjectDir) -> None:
    proj.pipeline(
        """\
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            handover: {max_retries: 2}
        """
    )
    with pytest.raises(ManifestError) as info:
        load_pipeline(proj.root, "p")
    assert at(info.value.problems) == [(5, 16, "unknown field 'max_retries'")]


class LegacySettings(ContractSettings):
    source: str | None = None
    legacy: bool | None = None

    NOT_RUN = {"legacy": "legacy checks"}


class Legacy(ContractType[LegacySettings]):
    name = "legacy"
    Settings = LegacySettings


def test_a_contract_types_setting_it_does_not_run_is_a_named_warning(proj: ProjectDir) -> None:
    # a plugin type lists its own NOT_RUN settings, as the manifest's models do
    types = default_contract_types()
    types.register("legacy", Legacy())
    ctx = dataclasses.replace(LINT_CONTEXT, contract_types=types)
    proj.pipeline(
        """\
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            handover:
              contracts:
                - {type: legacy, source: x}
                - type: legacy
                  legacy: true
        """
    )
    assert at(proj.lint(ctx=ctx), "warning") == [
        (9, 11, "swell does not run `legacy` (legacy checks) yet; it is ignored")
    ]
