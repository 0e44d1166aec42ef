"""Wave's load and validation tables (internal/manifest/parser_test.go,
internal/pipeline/dag_test.go, retry_test.go, contract_test.go), mirrored on
projects of our own loaded and checked as `swell validate` does. Case ids name the
Wave test; docs/conformance.md, "Wave's test tables", lists where swell differs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from manifest_helpers import ProjectDir, make_project

from swell.errors import ManifestError

MANIFEST = """\
kind: WaveManifest
metadata: {name: tables}
adapters:
  claude: {binary: claude, mode: headless}
personas:
  craftsman: {adapter: claude, system_prompt: "You build."}
  navigator: {adapter: claude, system_prompt: "You plan."}
  agent1: {adapter: claude, system_prompt: "One."}
  agent2: {adapter: claude, system_prompt: "Two."}
"""


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    project = make_project(tmp_path, monkeypatch)
    project.manifest(MANIFEST)
    return project


def _report(proj: ProjectDir, steps: str) -> list[str]:
    """`severity: message` of each problem `swell validate` reports for these steps."""
    proj.pipeline("kind: WavePipeline\nmetadata: {name: p}\nsteps:\n" + textwrap.dedent(steps))
    try:
        problems = proj.lint()
    except ManifestError as exc:
        problems = exc.problems
    return [f"{p.severity}: {p.message}" for p in problems]


def _errors(report: list[str]) -> list[str]:
    return [r for r in report if r.startswith("error")]


DAG = "pipeline/dag_test.go:"
RETRY = "pipeline/retry_test.go:TestRetryConfig_Validate/"
A = """\
- id: step1
  persona: agent1
  exec: {type: prompt, source: a}
"""
# (id, steps, expected: "ok", or a word the (first) error or warning contains)
CASES = [
    (DAG + "TestValidateDAG_ValidPipeline", A + """\
- id: step2
  persona: agent2
  dependencies: [step1]
  exec: {type: prompt, source: b}
""", "ok"),
    (DAG + "TestValidateDAG_MissingDependency", A + """\
- id: step2
  persona: agent2
  dependencies: [nowhere]
  exec: {type: prompt, source: b}
""", "error: nowhere"),
    (DAG + "TestValidateDAG_CycleDetection", """\
- id: a
  persona: agent1
  dependencies: [b]
  exec: {type: prompt, source: a}
- id: b
  persona: agent1
  dependencies: [a]
  exec: {type: prompt, source: b}
""", "error: cycle"),
    (DAG + "TestValidateDAG_SelfReference", """\
- id: a
  persona: agent1
  dependencies: [a]
  exec: {type: prompt, source: a}
""", "error: a"),
    (DAG + "TestValidateDAG_ArtifactRefStepAndPipelineMutuallyExclusive/both", A + """\
- id: step2
  persona: agent2
  dependencies: [step1]
  memory:
    inject_artifacts: [{step: step1, pipeline: other, artifact: report, as: input}]
  exec: {type: prompt, source: b}
""", "error: "),
    (DAG + "TestValidateDAG_ConcurrencyAndMatrixMutuallyExclusive/both", """\
- id: a
  persona: agent1
  concurrency: 2
  strategy: {type: matrix, items_source: items.json, item_key: items}
  exec: {type: prompt, source: a}
""", "error: "),
    (DAG + "TestValidateDAG_ReworkTargetExists", """\
- id: step1
  persona: agent1
  retry: {max_attempts: 2, on_failure: rework, rework_step: nonexistent}
  exec: {type: prompt, source: a}
""", "error: nonexistent"),
    (DAG + "TestValidateDAG_ReworkTargetNotUpstream", """\
- id: step1
  persona: agent1
  rework_only: true
  exec: {type: prompt, source: a}
- id: step2
  persona: agent2
  dependencies: [step1]
  retry: {max_attempts: 2, on_failure: rework, rework_step: step1}
  exec: {type: prompt, source: b}
""", "error: "),
    (DAG + "TestValidateDAG_ReworkTargetDependsOnFailingStep", """\
- id: step1
  persona: agent1
  retry: {max_attempts: 2, on_failure: rework, rework_step: step2}
  exec: {type: prompt, source: a}
- id: step2
  persona: agent2
  rework_only: true
  dependencies: [step1]
  exec: {type: prompt, source: b}
""", "error: "),
    (DAG + "TestValidateDAG_ReworkTargetSelfReference", """\
- id: step1
  persona: agent1
  retry: {max_attempts: 2, on_failure: rework, rework_step: step1}
  exec: {type: prompt, source: a}
""", "error: "),
    (DAG + "TestValidateDAG_ValidReworkTarget", """\
- id: step1
  persona: agent1
  retry: {max_attempts: 2, on_failure: rework, rework_step: fallback}
  exec: {type: prompt, source: a}
- id: fallback
  persona: agent2
  rework_only: true
  exec: {type: prompt, source: fix}
""", "ok"),
    (DAG + "TestValidateDAG_ReworkTargetNotReworkOnly", """\
- id: step1
  persona: agent1
  retry: {max_attempts: 2, on_failure: rework, rework_step: step2}
  exec: {type: prompt, source: a}
- id: step2
  persona: agent2
  exec: {type: prompt, source: b}
""", "error: `rework_only: true`"),
    (DAG + "TestValidateDAG_RetryConfigValidation", """\
- id: step1
  persona: agent1
  retry: {on_failure: fail, rework_step: fallback}
  exec: {type: prompt, source: a}
- id: fallback
  persona: agent2
  exec: {type: prompt, source: fix}
""", "error: "),
    (DAG + "TestValidateDAG_DuplicateReworkTarget", """\
- id: step-1
  persona: navigator
  retry: {max_attempts: 2, on_failure: rework, rework_step: rework-step}
  exec: {type: prompt, source: a}
- id: step-2
  persona: navigator
  retry: {max_attempts: 2, on_failure: rework, rework_step: rework-step}
  exec: {type: prompt, source: b}
- id: rework-step
  persona: navigator
  rework_only: true
  exec: {type: prompt, source: fix}
""", "error: "),
    (DAG + "TestValidateDAG_InvalidOnFailureValue", """\
- id: step-1
  persona: navigator
  retry: {on_failure: invalid_value}
  exec: {type: prompt, source: a}
""", "error: "),
    (DAG + "TestValidateDAG_ThreadGroupWithDependencyChain", """\
- id: step-a
  persona: craftsman
  thread: impl
  exec: {type: prompt, source: a}
- id: step-b
  persona: craftsman
  thread: impl
  dependencies: [step-a]
  exec: {type: prompt, source: b}
""", "ok"),
    (DAG + "TestValidateDAG_ThreadGroupWithoutDependencyChain(deliberate)", """\
- id: step-a
  persona: craftsman
  thread: impl
  exec: {type: prompt, source: a}
- id: step-b
  persona: craftsman
  thread: impl
  exec: {type: prompt, source: b}
""", "ok"),
    (DAG + "TestValidateDAG_InvalidFidelityValue", """\
- id: step-a
  persona: craftsman
  thread: impl
  fidelity: invalid
  exec: {type: prompt, source: a}
""", "error: "),
    (DAG + "TestValidateDAG_ValidFidelityValues", """\
- id: step-a
  persona: craftsman
  thread: impl
  fidelity: full
  exec: {type: prompt, source: a}
- id: step-b
  persona: craftsman
  thread: impl
  fidelity: compact
  dependencies: [step-a]
  exec: {type: prompt, source: b}
- id: step-c
  persona: craftsman
  thread: impl
  fidelity: summary
  dependencies: [step-b]
  exec: {type: prompt, source: c}
- id: step-d
  persona: craftsman
  thread: impl
  fidelity: fresh
  dependencies: [step-c]
  exec: {type: prompt, source: d}
""", "ok"),
    (DAG + "TestValidateDAG_FidelityWithoutThread_Warning", """\
- id: step-a
  persona: craftsman
  fidelity: full
  exec: {type: prompt, source: a}
""", "warning: "),
    (DAG + "TestValidateDAG_MixedPersonaThread_Warning(deliberate)", """\
- id: implement
  persona: craftsman
  thread: impl
  exec: {type: prompt, source: a}
- id: review
  persona: navigator
  thread: impl
  dependencies: [implement]
  exec: {type: prompt, source: b}
""", "ok"),
    (DAG + "TestValidateDAG_AgentReviewSelfPreventionAndReworkStep/self-review", """\
- id: implement
  persona: craftsman
  exec: {type: prompt, source: a}
  handover:
    contract: {type: agent_review, persona: craftsman, criteria_path: c.md}
""", "error: "),
    (DAG + "TestValidateDAG_AgentReviewSelfPreventionAndReworkStep/valid_reviewer", """\
- id: implement
  persona: craftsman
  exec: {type: prompt, source: a}
  handover:
    contract: {type: agent_review, persona: navigator, criteria_path: c.md}
""", "ok"),
    (RETRY + "empty_config_is_valid", "- {id: a, type: command, script: 'true', retry: {}}\n", "ok"),
    (RETRY + "on_failure=fail_is_valid",
     "- {id: a, type: command, script: 'true', retry: {on_failure: fail}}\n", "ok"),
    (RETRY + "on_failure=skip_is_valid",
     "- {id: a, type: command, script: 'true', retry: {on_failure: skip}}\n", "ok"),
    (RETRY + "on_failure=continue_is_valid",
     "- {id: a, type: command, script: 'true', retry: {on_failure: continue}}\n", "ok"),
    (RETRY + "on_failure=rework_without_rework_step_is_invalid",
     "- {id: a, type: command, script: 'true', retry: {on_failure: rework}}\n",
     "error: retry.on_failure: rework needs a `rework_step`"),
    (RETRY + "rework_step_set_without_on_failure=rework_is_invalid",
     "- {id: a, type: command, script: 'true', retry: {on_failure: fail, rework_step: a}}\n",
     "error: retry.rework_step is only used with `on_failure: rework`"),
    (RETRY + "rework_step_set_with_empty_on_failure_is_invalid",
     "- {id: a, type: command, script: 'true', retry: {rework_step: a}}\n",
     "error: retry.rework_step is only used with `on_failure: rework`"),
    ("pipeline/retry_test.go:TestRetryConfig_Validate_UnknownPolicy",
     "- {id: a, type: command, script: 'true', retry: {policy: bad}}\n",
     "error: 'policy' must be one of"),
    ("pipeline/retry_test.go:TestRetryConfig_ParseBaseDelay/invalid_duration(deliberate)",
     "- {id: a, type: command, script: 'true', retry: {base_delay: not-a-duration}}\n",
     "error: invalid duration 'not-a-duration'"),
    ("pipeline/retry_test.go:TestRetryConfig_ParseMaxDelay/invalid_duration(deliberate)",
     "- {id: a, type: command, script: 'true', retry: {max_delay: not-a-duration}}\n",
     "error: invalid duration 'not-a-duration'"),
    ("pipeline/retry_test.go:TestRetryConfig_EffectiveMaxAttempts/zero_returns_1(deliberate)",
     "- {id: a, type: command, script: 'true', retry: {max_attempts: 0}}\n",
     "error: 'max_attempts'"),
    ("pipeline/retry_test.go:TestRetryConfig_EffectiveMaxAttempts/negative_returns_1(deliberate)",
     "- {id: a, type: command, script: 'true', retry: {max_attempts: -1}}\n",
     "error: 'max_attempts'"),
    ("contract/spec_derived_test.go:(the_type_itself)(deliberate)", """\
- id: a
  type: command
  script: "true"
  handover:
    contract: {type: spec_derived_test, spec_artifact: spec, test_persona: agent1,
               implementation_step: a}
""", "error: unknown contract type 'spec_derived_test'"),
    ("contract/contract_test.go:TestNewValidator/unknown(deliberate)", """\
- id: a
  type: command
  script: "true"
  handover: {contract: {type: custom_validator}}
""", "error: "),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate(proj: ProjectDir, steps: str, expected: str) -> None:
    (proj.root / "c.md").write_text("- it works\n")
    report = _report(proj, steps)
    if expected == "ok":
        assert not _errors(report), report
    elif expected.startswith("warning"):
        assert not _errors(report), report
        assert any(r.startswith(expected) for r in report), report
    else:
        severity, _, words = expected.partition(": ")
        assert any(r.startswith(severity) and words in r for r in report), report


# ----------------------------------------------------------------- manifest/parser_test.go
MP = "manifest/parser_test.go:"
BASE = "kind: WaveManifest\napiVersion: v1\n"
ADAPTER = "adapters:\n  claude: {binary: claude, mode: headless}\n"
# (id, wave.yaml, expected: "ok" or "error: WORDS")
MANIFESTS = [
    (MP + "TestLoadValidManifest", BASE + "metadata: {name: t}\n" + ADAPTER
     + "personas:\n  nav: {adapter: claude, system_prompt_file: prompts/nav.md}\n"
     + "runtime: {workspace_root: .agents/workspaces}\n", "ok"),
    (MP + "TestLoadInvalidYAML", BASE + "metadata: {name: t\n", "error: YAML syntax error"),
    (MP + "TestValidateMissingAdapter", BASE + "metadata: {name: t}\n"
     + "personas:\n  nav: {adapter: missing-adapter, system_prompt_file: prompts/nav.md}\n",
     "error: unknown adapter 'missing-adapter'"),
    (MP + "TestValidateMissingSystemPromptFile", BASE + "metadata: {name: t}\n" + ADAPTER
     + "personas:\n  nav: {adapter: claude, system_prompt_file: nonexistent.txt}\n",
     "error: system prompt file nonexistent.txt does not exist"),
    (MP + "TestValidateEmptyPersonaAdapter", BASE + "metadata: {name: t}\n" + ADAPTER
     + "personas:\n  nav: {adapter: '', system_prompt_file: prompts/nav.md}\n",
     "error: unknown adapter ''"),
    # deliberate differences (docs/conformance.md): swell needs none of these to run
    (MP + "TestValidateMissingMetadataName(deliberate)", BASE + "metadata: {description: x}\n",
     "ok"),
    (MP + "TestValidateMissingWorkspaceRoot(deliberate)", BASE + "metadata: {name: t}\n"
     + "runtime: {}\n", "ok"),
    (MP + "TestValidateEmptyAdapterBinary(deliberate)", BASE + "metadata: {name: t}\n"
     + "adapters:\n  claude: {binary: '', mode: headless}\n", "ok"),
    (MP + "(persona without system_prompt_file)(deliberate)", BASE + "metadata: {name: t}\n"
     + ADAPTER + "personas:\n  nav: {adapter: claude}\n", "ok"),
]  # fmt: skip
SCOPES = [
    ("valid_token_scopes_are_accepted/multiple_valid_scopes",
     ["issues:read", "pulls:write", "repos:admin"], "ok"),
    ("valid_token_scopes_are_accepted/write_and_admin_scopes",
     ["actions:write", "packages:admin"], "ok"),
    ("invalid_token_scopes_are_rejected/bare_word_without_colon", ["invalid"], "error: "),
    ("invalid_token_scopes_are_rejected/leading_colon_missing_resource", [":read"], "error: "),
    ("invalid_token_scopes_are_rejected/unknown_permission_level", ["issues:unknown"],
     "error: "),
    ("invalid_token_scopes_are_rejected/trailing_colon_missing_permission", ["issues:"],
     "error: "),
    ("invalid_token_scopes_are_rejected/empty_string_scope", [""], "error: token_scopes"),
    ("invalid_token_scopes_are_rejected/completely_invalid_format", ["no-colon-at-all"],
     "error: "),
    ("missing_token_scopes_field_is_accepted/empty_scopes_slice", [], "ok"),
]  # fmt: skip
for _id, _scopes, _expected in SCOPES:
    MANIFESTS.append(
        (
            MP + "TestValidatePersonaTokenScopes/" + _id,
            BASE + "metadata: {name: t}\n" + ADAPTER
            + f"personas:\n  nav: {{adapter: claude, token_scopes: {_scopes!r}}}\n",
            _expected,
        )
    )  # fmt: skip


@pytest.mark.parametrize(
    ("manifest", "expected"), [c[1:] for c in MANIFESTS], ids=[c[0] for c in MANIFESTS]
)
def test_manifest(proj: ProjectDir, manifest: str, expected: str) -> None:
    proj.manifest(manifest)
    proj.file("prompts/nav.md", "You plan.\n")
    report = _report(proj, "- {id: a, type: command, script: 'true'}\n")
    if expected == "ok":
        assert not _errors(report), report
    else:
        severity, _, words = expected.partition(": ")
        assert any(r.startswith(severity) and words in r for r in report), report


# ------------------------------------------------- graph_test.go: TestValidateGraph_*
VG = "pipeline/graph_test.go:TestValidateGraph_BasicValidation/"
C = "  type: command\n  script: 'true'\n"
GRAPHS = [
    (VG + "valid_graph_pipeline", "- id: A\n" + C + "  edges: [{target: B}]\n"
     "- id: B\n  type: conditional\n  edges: [{target: A, condition: outcome=failure},"
     " {target: C}]\n- id: C\n" + C, "ok"),
    (VG + "edge_targets_non-existent_step", "- id: A\n" + C
     + "  edges: [{target: nonexistent}]\n", "error: nonexistent"),
    (VG + "conditional_step_without_edges", "- id: gate\n  type: conditional\n", "error: "),
    (VG + "command_step_without_script", "- id: cmd\n  type: command\n", "error: "),
    (VG + "invalid_condition_syntax", "- id: A\n" + C
     + "  edges: [{target: B, condition: invalid}]\n- id: B\n" + C, "error: "),
    (VG + "negative_max_visits", "- id: A\n" + C + "  max_visits: -1\n", "error: "),
    (VG + "dependency_on_non-existent_step", "- id: A\n" + C + "  dependencies: [ghost]\n",
     "error: ghost"),
    (VG + "valid_command_step_with_script", "- id: cmd\n  type: command\n"
     "  script: echo hello\n  edges: [{target: next}]\n- id: next\n" + C, "ok"),
    ("pipeline/graph_test.go:TestValidateGraph_AllowsFanOutWithEdges", "- id: A\n" + C
     + "  edges: [{target: B, condition: outcome=success}, {target: C}]\n- id: B\n" + C
     + "- id: C\n" + C, "ok"),
    # Wave's walker runs one step at a time and needs an edge to each; swell starts
    # every ready dependent at once (deliberate)
    ("pipeline/graph_test.go:TestValidateGraph_RejectsFanOutWithoutEdges(deliberate)",
     "- id: A\n" + C + "- id: B\n" + C + "  dependencies: [A]\n- id: C\n" + C
     + "  dependencies: [A]\n- id: D\n" + C + "  edges: [{target: _complete}]\n", "ok"),
    ("pipeline/graph_test.go:TestGraphWalker_EmptyPipeline", "[]\n", "error: "),
]  # fmt: skip


@pytest.mark.parametrize(("steps", "expected"), [c[1:] for c in GRAPHS], ids=[c[0] for c in GRAPHS])
def test_validate_graph(proj: ProjectDir, steps: str, expected: str) -> None:
    report = _report(proj, steps)
    if expected == "ok":
        assert not _errors(report), report
    else:
        severity, _, words = expected.partition(": ")
        assert any(r.startswith(severity) and words in r for r in report), report


def test_negative_max_step_visits(proj: ProjectDir) -> None:
    """pipeline/graph_test.go:TestValidateGraph_BasicValidation/negative_max_step_visits"""
    proj.pipeline(
        "kind: WavePipeline\nmetadata: {name: p}\nmax_step_visits: -1\n"
        "steps:\n- {id: a, type: command, script: 'true'}\n"
    )
    try:
        report = [f"{p.severity}: {p.message}" for p in proj.lint()]
    except ManifestError as exc:
        report = [f"{p.severity}: {p.message}" for p in exc.problems]
    assert _errors(report), report


# ------------------------------------------------ manifest/fallback_test.go, timeouts_test.go
FB = "manifest/fallback_test.go:TestValidateFallbacks/"
TWO = "adapters:\n  claude: {binary: claude}\n  codex: {type: claude}\n  gemini: {type: scripted}\n"
FALLBACKS = [
    (FB + "empty_fallbacks_is_valid", "{}", 0),
    (FB + "valid_fallback_chain", "{claude: [codex, gemini]}", 0),
    (FB + "self-reference_rejected", "{claude: [claude]}", 1),
    (FB + "unknown_primary_adapter", "{nope: [codex]}", 1),
    (FB + "unknown_fallback_adapter", "{claude: [nope]}", 1),
    (FB + "duplicate_fallback_rejected", "{claude: [codex, codex]}", 1),
    (FB + "multiple_errors_accumulated", "{claude: [claude, nope]}", 2),
]
TO = "manifest/timeouts_test.go:"
TIMEOUTS = [
    (TO + "TestValidateTimeouts_RejectsNegative/negative_step_default",
     "timeouts: {step_default_minutes: -1}", 1),
    (TO + "TestValidateTimeouts_RejectsNegative/negative_forge_api",
     "timeouts: {forge_api_seconds: -10}", 1),
    (TO + "TestValidateTimeouts_RejectsNegative/negative_retry_max_delay",
     "timeouts: {retry_max_delay_seconds: -1}", 1),
    (TO + "TestValidateTimeouts_AcceptsZeroAndPositive",
     "timeouts: {step_default_minutes: 0, forge_api_seconds: 30, retry_max_delay_seconds: 5}", 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("runtime", "errors"),
    [(f"fallbacks: {f}", n) for _, f, n in FALLBACKS] + [(t, n) for _, t, n in TIMEOUTS],
    ids=[c[0] for c in FALLBACKS] + [c[0] for c in TIMEOUTS],
)
def test_runtime_settings(proj: ProjectDir, runtime: str, errors: int) -> None:
    proj.manifest(BASE + "metadata: {name: t}\n" + TWO + f"runtime:\n  {runtime}\n")
    report = _report(proj, "- {id: a, type: command, script: 'true'}\n")
    assert len(_errors(report)) == errors, report


# ---------------------------------------------------------------- pipeline/iotypes_test.go
IO = "pipeline/iotypes_test.go:"
IO_ROWS = [
    ("TestValidatePipelineIOTypes_KnownTypes", "input: {source: cli, type: issue_ref}\n"
     "pipeline_outputs: {pr: {step: a, artifact: pr-result, type: pr_ref}}\n", "ok"),
    ("TestValidatePipelineIOTypes_EmptyTypeTreatedAsString", "input: {source: cli}\n"
     "pipeline_outputs: {report: {step: a, artifact: pr-result}}\n", "ok"),
    ("TestValidatePipelineIOTypes_ExplicitString", "input: {source: cli, type: string}\n", "ok"),
    ("TestValidatePipelineIOTypes_UnknownInputType",
     "input: {source: cli, type: not_a_real_type}\n", "error: not_a_real_type"),
    ("TestValidatePipelineIOTypes_UnknownOutputType", "input: {source: cli}\n"
     "pipeline_outputs: {x: {step: a, artifact: pr-result, type: made_up}}\n", "error: made_up"),
    ("TestValidatePipelineIOTypes_OutputStepMustExist", "input: {source: cli}\n"
     "pipeline_outputs: {x: {step: ghost, artifact: pr-result}}\n", "error: ghost"),
    ("TestYAMLPipelineLoader_RejectsUnknownType",
     "input: {source: cli, type: totally_not_a_type}\n", "error: totally_not_a_type"),
    ("TestYAMLPipelineLoader_AcceptsTypedIO", "input: {source: cli, type: issue_ref}\n"
     "pipeline_outputs: {pr: {step: a, artifact: pr-result, type: pr_ref}}\n", "ok"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("header", "expected"), [r[1:] for r in IO_ROWS], ids=[IO + r[0] for r in IO_ROWS]
)
def test_io_types(proj: ProjectDir, header: str, expected: str) -> None:
    proj.pipeline(
        "kind: WavePipeline\nmetadata: {name: p}\n" + header + "steps:\n"
        "- id: a\n  type: command\n  script: 'true'\n"
        "  output_artifacts: [{name: pr-result, path: out.json, type: json}]\n"
    )
    try:
        report = [f"{p.severity}: {p.message}" for p in proj.lint()]
    except ManifestError as exc:
        report = [f"{p.severity}: {p.message}" for p in exc.problems]
    if expected == "ok":
        assert not _errors(report), report
    else:
        severity, _, words = expected.partition(": ")
        assert any(r.startswith(severity) and words in r for r in report), report
