"""Wave's template test tables (internal/pipeline/template_test.go, context_test.go),
mirrored through `swell run`: one project of our own runs one pipeline whose steps
and sub-pipelines render each case, and each case checks what was rendered. Case ids
name the Wave test (`FILE:Test/row`); docs/conformance.md, "Wave's test tables"."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import swell, write_pipeline
from swell.engine.visit.forge import feature_number

BRANCH = "018-enhanced-progress"
MANIFEST = """\
apiVersion: v1
kind: WaveManifest
metadata: {name: tables}
project: {test_command: "make check"}
"""
# a child that records what it was given: the case (its `env.case`) and its input
ECHO = """\
kind: WavePipeline
metadata: {name: echo-child}
steps:
  - id: say
    type: command
    script: |
      printf '%s=<%s>\\n' "{{ env.case }}" "{{ input }}" >> "$SWELL_PROJECT_ROOT/results.txt"
      printf '%s=<%s|%s|%s>\\n' "{{ env.case }}-env" "{{ env.profile }}" "{{env.region}}" \\
        "{{ env.missing }}" >> "$SWELL_PROJECT_ROOT/results.txt"
      printf '%s=<%s %s>\\n' "{{ env.case }}-env2" "profile is {{env.profile}}!" \\
        "{{env.profile}}/{{env.region}}" >> "$SWELL_PROJECT_ROOT/results.txt"
"""
SCOPE = (
    '{"count": 5, "severity": "high", "meta": {"status": "complete"}, '
    '"objects": [{"url": "https://example.org/issues/1", "id": 7}], '
    '"names": ["audit-dead-code"], "pipes": ["echo-child"]}'
)


def _child(case: str, input_: str, extra: str = "", env: str = "") -> str:
    return f"""  - id: {case}
    dependencies: [scope]
    pipeline: echo-child
    input: "{input_}"{extra}
    config: {{env: {{case: {case}{env}}}}}
"""


ITERATE = '\n    iterate: {{over: "{{{{ scope.output.{} }}}}"}}'
CHILDREN = "".join(
    [
        _child("input", "{{input}}"),
        _child("embedded", "Process: {{ input }} with care"),
        _child("output", "{{ scope.output }}"),
        _child("field", "{{scope.output.severity}}"),
        _child("nested", "{{ scope.output.meta.status }}"),
        _child("multiple", "{{input}} has {{scope.output.count}} items"),
        _child("plain", "plain text"),
        _child("envs", "x", env=", profile: core, region: us-west"),
        _child("item-field", "{{ item.url }}", ITERATE.format("objects")),
        _child("item-full", "{{ item }}", ITERATE.format("objects")),
        _child("item-string", "{{ item }}", ITERATE.format("names")),
        _child("iteration", "iteration-{{ iteration }}", ITERATE.format("names")),
        _child("out-whole", "{{ scope.out.result }}"),
        _child("out-field", "{{ scope.out.result.severity }}"),
        _child("out-legacy", "{{ scope.output.severity }}"),
        _child("out-both", "[{{ scope.out.result.count }}|{{ scope.output.severity }}]"),
    ]
)


TABLES = f"""\
kind: WavePipeline
metadata: {{name: tables}}
steps:
  - id: scope
    type: command
    script: |
      mkdir -p .agents/output
      printf '%s' '{SCOPE}' > .agents/output/scope.json
    output_artifacts: [{{name: result, path: .agents/output/scope.json, type: json}}]
  - id: the-step
    type: command
    script: |
      {{
      printf '%s\\n' "branch=<specs/{{{{pipeline_context.branch_name}}}}/spec.md>"
      printf '%s\\n' "ids=<{{{{pipeline_context.pipeline_name}}}}/{{{{pipeline_context.step_id}}}}/out.json>"
      printf '%s\\n' "legacy=<{{{{pipeline_name}}}}/{{{{step_id}}}}>"
      printf '%s\\n' "spaced=<feat/{{{{ pipeline_name }}}}>"
      printf '%s\\n' "ctx-spaced=<{{{{ pipeline_context.pipeline_name }}}}/{{{{ pipeline_context.step_id }}}}>"
      printf '%s\\n' "run-id=<{{{{ pipeline_id }}}}|{{{{pipeline_id}}}}|{{{{ pipeline_context.pipeline_id }}}}>"
      printf '%s\\n' "feature=<{{{{ pipeline_context.feature_num }}}}|{{{{ feature_num }}}}>"
      printf '%s\\n' "static=<static/path/file.txt>"
      printf '%s\\n' "empty=<>"
      printf '%s\\n' "project=<{{{{ project.test_command }}}}>"
      }} >> "$SWELL_PROJECT_ROOT/results.txt"
{CHILDREN}  - id: item-pipeline
    dependencies: [scope]
    pipeline: "{{{{ item }}}}"
    input: "{{{{ item }}}}"
    iterate: {{over: "{{{{ scope.output.pipes }}}}"}}
    config: {{env: {{case: item-pipeline}}}}
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What each case rendered to: `name=<value>` lines of the run's output and files."""
    root = tmp_path_factory.mktemp("tables")
    (root / "wave.yaml").write_text(MANIFEST)
    _git(root, "init", "-q", "-b", BRANCH)
    write_pipeline(root, "echo-child", ECHO)
    write_pipeline(root, "tables", TABLES)
    result = swell("run", "tables", "--input", "feature-x", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = result.stdout.splitlines()[0].split()[1]
    text = (root / "results.txt").read_text()
    found = dict(re.findall(r"^([\w-]+)=<(.*)>$", text, re.MULTILINE))
    found["run_id"] = run_id
    return found


T = "pipeline/template_test.go:"
S = "pipeline/resolve_step_output_ref_test.go:"
X = "pipeline/context_test.go:"
CASES = [
    (T + "TestResolveTemplate_Input", "input", "feature-x"),
    (T + "TestResolveTemplate_InputEmbedded", "embedded", "Process: feature-x with care"),
    (T + "TestResolveTemplate_StepOutput", "output", SCOPE),
    (T + "TestResolveTemplate_StepOutputField", "field", "high"),
    (T + "TestResolveTemplate_StepOutputNestedField", "nested", "complete"),
    (T + "TestResolveTemplate_Item", "item-field", "https://example.org/issues/1"),
    (T + "TestResolveTemplate_ItemStringUnquoted", "item-string", "audit-dead-code"),
    (T + "TestResolveTemplate_ItemStringInPipelineName", "item-pipeline", "echo-child"),
    (T + "TestResolveTemplate_Iteration", "iteration", "iteration-0"),
    (T + "TestResolveTemplate_MultipleExpressions", "multiple", "feature-x has 5 items"),
    (T + "TestResolveTemplate_NoExpressions", "plain", "plain text"),
    (T + "TestResolveTemplate_Env/single_key+second_key+missing_key", "envs-env", "core|us-west|"),
    (
        T + "TestResolveTemplate_Env/embedded_in_string+two_keys",
        "envs-env2",
        "profile is core! core/us-west",
    ),
    (T + "TestResolveTemplate_EnvNilMap", "input-env", "||"),
    (
        X + "TestPipelineContext_ResolvePlaceholders/branch_name_resolution",
        "branch",
        f"specs/{BRANCH}/spec.md",
    ),
    (
        X + "TestPipelineContext_ResolvePlaceholders/multiple_variables",
        "ids",
        "tables/the-step/out.json",
    ),
    (X + "TestPipelineContext_ResolvePlaceholders/legacy_variables", "legacy", "tables/the-step"),
    (X + "TestPipelineContext_ResolvePlaceholders/spaced_pipeline_name", "spaced", "feat/tables"),
    (
        X + "TestPipelineContext_ResolvePlaceholders/spaced_pipeline_context_variable",
        "ctx-spaced",
        "tables/the-step",
    ),
    (X + "TestPipelineContext_ResolvePlaceholders/no_variables", "static", "static/path/file.txt"),
    (X + "TestPipelineContext_ResolvePlaceholders/empty_template", "empty", ""),
    (X + "TestNewContextWithProject_AllFields", "project", "make check"),
    (X + "TestExtractFeatureNumber/standard_speckit_format(run)", "feature", f"{BRANCH}|{BRANCH}"),
    (S + "TestResolveStepOutputRef_TypedNamedOutput/whole_file", "out-whole", SCOPE),
    (S + "TestResolveStepOutputRef_TypedNamedOutput/field", "out-field", "high"),
    (S + "TestResolveStepOutputRef_LegacyStillWorks", "out-legacy", "high"),
    (S + "TestResolveStepOutputRef_TypedAndLegacyCoexist", "out-both", "[5|high]"),
]


@pytest.mark.parametrize(("name", "value"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rendered(rendered: dict[str, str], name: str, value: str) -> None:
    assert rendered.get(name) == value, rendered


def test_run_ids(rendered: dict[str, str]) -> None:
    """pipeline/context_test.go:TestPipelineContext_ResolvePlaceholders/bare_pipeline_id
    (+ _unspaced, and pipeline_context.pipeline_id): the run's id, every spelling."""
    run_id = rendered["run_id"]
    assert rendered["run-id"] == f"{run_id}|{run_id}|{run_id}"


def test_an_object_item_renders_as_json(rendered: dict[str, str]) -> None:
    """pipeline/template_test.go:TestResolveTemplate_ItemFull: the item as JSON. Wave
    inserts the item's bytes as written; swell writes the same JSON value with keys
    sorted (deliberate, docs/conformance.md)."""
    assert rendered["item-full"] == '{"id": 7, "url": "https://example.org/issues/1"}'


@pytest.mark.parametrize(
    ("branch", "number"),
    [
        ("018-enhanced-progress", "018-enhanced-progress"),
        ("001-user-authentication", "001-user-authentication"),
        ("feature/123-new-feature", "feature/123-new-feature"),
        ("feature/7-new-feature", "feature/007-new-feature"),
        ("feature-branch", ""),
        ("123", ""),
        ("", ""),
    ],
    ids=[
        X + "TestExtractFeatureNumber/standard_speckit_format",
        X + "TestExtractFeatureNumber/different_number",
        X + "TestExtractFeatureNumber/feature_prefix_with_number",
        X + "TestExtractFeatureNumber/feature_prefix_padded(padNumber)",
        X + "TestExtractFeatureNumber/no_number_pattern",
        X + "TestExtractFeatureNumber/just_number",
        X + "TestExtractFeatureNumber/empty_branch",
    ],
)
def test_feature_number(branch: str, number: str) -> None:
    assert feature_number(branch) == number


BAD = """\
kind: WavePipeline
metadata: {{name: bad}}
steps:
  - id: scope
    type: command
    script: "true"
    output_artifacts: [{{name: result, path: out.json, type: json}}]
  - id: one
    dependencies: [scope]
    pipeline: echo-child
    input: "{template}"
"""


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{{nonexistent.output}}", "unknown template variable 'nonexistent.output'"),
        ("{{ item.field }}", "is set only in an `iterate` step"),
        ("{{invalid}}", "unknown template variable 'invalid'"),
        ("run {{ project.name }} now", "'project.name' is not set in wave.yaml `project:`"),
        ("{{ scope.out.nonexistent }}", "step 'scope' declares no such artifact"),
        ("{{ scope.out }}", "step 'scope' declares no such artifact"),
    ],
    ids=[
        T + "TestResolveTemplate_MissingStep",
        T + "TestResolveTemplate_MissingItem",
        T + "TestResolveTemplate_InvalidExpression",
        X + "TestPipelineContext_ResolvePlaceholders/unresolved_project_var(deliberate)",
        S + "TestResolveStepOutputRef_TypedNamed_Miss(deliberate)",
        S + "TestResolveStepOutputRef_MalformedOut(deliberate)",
    ],
)
def test_what_cannot_resolve_is_refused_by_validate(
    tmp_path: Path, template: str, says: str
) -> None:
    """Wave fails these when it renders them (it renders an unset `project.*` empty,
    and leaves an unknown `STEP.out.NAME` as written); swell says so before the run,
    at `swell validate`."""
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    write_pipeline(tmp_path, "echo-child", ECHO)
    write_pipeline(tmp_path, "bad", BAD.format(template=template))
    result = swell("validate", "bad", cwd=tmp_path)
    assert result.returncode == 1
    assert says in result.stdout + result.stderr
