"""Wave's `wave validate` tests (cmd/wave/commands/validate_test.go), mirrored on
`swell validate` as a user runs it: our own project files, the exit code and what
is printed. Case ids name the Wave test; docs/conformance.md, "Wave's test tables"."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import swell, write_pipeline

V = "cmd/validate_test.go:"
HEAD = "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: t}\n"
CLAUDE = "adapters:\n  claude: {binary: claude, mode: headless}\n"
NAV = "personas:\n  navigator: {adapter: claude, system_prompt_file: personas/navigator.md}\n"
PIPE = """\
kind: WavePipeline
metadata: {name: test}
steps:
%s"""
STEP = "  - {id: %s, persona: %s, exec: {type: prompt, source: go}%s}\n"
# (id, wave.yaml or None, pipeline steps or None, validate's arguments, exit code,
#  words in what it prints)
CASES = [
    (V + "TestValidateCmd_ValidManifest", HEAD + CLAUDE + NAV, None, [], 0, "ok:"),
    (V + "TestValidateCmd_InvalidAdapterReference",
     HEAD + "personas:\n  navigator: {adapter: nope, system_prompt_file: personas/navigator.md}\n",
     None, [], 1, "unknown adapter 'nope'"),
    (V + "TestValidateCmd_MissingSystemPromptFile",
     HEAD + CLAUDE + "personas:\n  navigator: {adapter: claude, system_prompt_file: gone.md}\n",
     None, [], 1, "gone.md does not exist"),
    (V + "TestValidateCmd_MalformedYAML", HEAD + "adapters: [\n", None, [], 1, "YAML"),
    (V + "TestValidateCmd_MalformedYAML_TabIndent",
     "apiVersion: v1\nkind: WaveManifest\nmetadata:\n\tname: test\n", None, [], 1,
     "wave.yaml:4:1: YAML syntax error"),
    (V + "TestValidateCmd_MalformedYAML_Completely", "{{{{ not yaml", None, [], 1, "YAML"),
    (V + "TestValidateCmd_InvalidKind", "apiVersion: v1\nkind: InvalidKind\nmetadata: {name: t}\n",
     None, [], 1, "kind"),
    (V + "TestValidateCmd_SpecificPipeline", HEAD + CLAUDE + NAV,
     STEP % ("a", "navigator", ""), ["test"], 0, "test"),
    (V + "TestValidateCmd_NonExistentPipeline", HEAD + CLAUDE + NAV, None, ["nowhere"], 1,
     "nowhere"),
    (V + "TestValidateCmd_PipelineInvalidPersona", HEAD + CLAUDE + NAV,
     STEP % ("a", "ghost", ""), ["test"], 1, "unknown persona 'ghost'"),
    (V + "TestValidateCmd_PipelineDuplicateStepIDs", HEAD + CLAUDE + NAV,
     STEP % ("a", "navigator", "") + STEP % ("a", "navigator", ""), ["test"], 1, "'a'"),
    (V + "TestValidateCmd_PipelineInvalidDependency", HEAD + CLAUDE + NAV,
     STEP % ("a", "navigator", ", dependencies: [ghost]"), ["test"], 1, "ghost"),
    (V + "TestValidateCmd_PersonaMissingAdapter", HEAD + CLAUDE
     + "personas:\n  navigator: {system_prompt_file: personas/navigator.md}\n", None, [], 1,
     "persona 'navigator' has no adapter"),
    (V + "TestValidateCmd_PersonaMissingSystemPromptFile(deliberate)", HEAD + CLAUDE
     + "personas:\n  navigator: {adapter: claude}\n", None, [], 0, "ok:"),
    # swell needs none of these (docs/conformance.md, deliberate)
    (V + "TestValidateCmd_MissingAPIVersion(deliberate)", "kind: WaveManifest\n", None, [], 0,
     "ok:"),
    (V + "TestValidateCmd_MissingWorkspaceRoot(deliberate)", HEAD + "runtime: {}\n", None, [],
     0, "ok:"),
    (V + "TestValidateCmd_AdapterMissingBinary(deliberate)",
     HEAD + "adapters:\n  claude: {mode: headless}\n", None, [], 0, "ok:"),
    (V + "TestValidateCmd_AdapterMissingMode(deliberate)",
     HEAD + "adapters:\n  claude: {binary: claude}\n", None, [], 0, "ok:"),
    (V + "TestValidateCmd_ErrorMessagesWithContext(deliberate:metadata.name)",
     "apiVersion: v1\nkind: WaveManifest\n" + CLAUDE, None, [], 0, "ok:"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("manifest", "steps", "args", "code", "says"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_validate(
    tmp_path: Path, manifest: str, steps: str | None, args: list[str], code: int, says: str
) -> None:
    (tmp_path / "wave.yaml").write_text(manifest)
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "navigator.md").write_text("You are a navigator.\n")
    if steps is not None:
        write_pipeline(tmp_path, "test", PIPE % steps)
    result = swell("validate", *args, cwd=tmp_path)
    printed = result.stdout + result.stderr
    assert result.returncode == code, printed
    assert says in printed, printed
    assert "Traceback" not in printed


@pytest.mark.parametrize(
    "case", [V + "TestValidateCmd_NonExistentManifest", V + "TestValidateCmd_SuggestsWaveInit"]
)
def test_validate_without_a_manifest(tmp_path: Path, case: str) -> None:
    result = swell("validate", cwd=tmp_path)
    printed = result.stdout + result.stderr
    assert result.returncode != 0 and "wave.yaml" in printed and "Traceback" not in printed


def test_a_missing_adapter_binary(tmp_path: Path) -> None:
    """V:TestValidateCmd_AdapterBinaryCheck: validate still succeeds (as in Wave); the
    missing CLI is named where swell checks the machine: `swell doctor` and before a
    run (`--dry-run`)."""
    binary = "definitely-not-a-real-binary-xyz123"
    (tmp_path / "wave.yaml").write_text(
        HEAD + f"adapters:\n  claude: {{binary: {binary}, mode: headless}}\n"
        "personas:\n  navigator: {adapter: claude, system_prompt: x}\n"
    )
    write_pipeline(tmp_path, "test", PIPE % (STEP % ("a", "navigator", "")))
    assert swell("validate", cwd=tmp_path).returncode == 0
    doctor = swell("doctor", cwd=tmp_path)
    assert binary in doctor.stdout + doctor.stderr


R = "cmd/run_test.go:"
PLAN_MANIFEST = (
    HEAD
    + """\
adapters:
  scripted: {options: {script: replies.yaml}}
personas:
  navigator:
    adapter: scripted
    system_prompt_file: personas/navigator.md
    temperature: 0.1
    permissions: {allowed_tools: [Read, Glob, Grep]}
  craftsman:
    adapter: scripted
    system_prompt_file: personas/navigator.md
    temperature: 0.7
    permissions: {allowed_tools: [Read, Write, Edit, Bash], deny: ["Bash(rm -rf *)"]}
"""
)
PLAN = """\
kind: WavePipeline
metadata: {name: test-pipeline, description: A pipeline for the dry run}
steps:
  - id: step1
    persona: navigator
    exec: {type: prompt, source: analyse}
    workspace: {mount: [{source: ./src, target: /src, mode: readonly}]}
    output_artifacts: [{name: analysis, path: .agents/output/analysis.json}]
  - id: step2
    persona: craftsman
    dependencies: [step1]
    memory:
      inject_artifacts: [{step: step1, artifact: analysis, as: analysis.json}]
    exec: {type: prompt, source: build}
    output_artifacts: [{name: code, path: .agents/output/code.txt}]
"""


def test_dry_run_shows_each_step(tmp_path: Path) -> None:
    """R:TestRunDryRunOutput and R:TestDryRunShowsAllStepDetails: the plan names the
    pipeline's description, each step's persona, adapter, temperature, allowed and
    denied tools, dependencies, mounts, injected artifacts and outputs. (Wave's
    wording and its "Memory: fresh" line, which Wave reads nowhere, are not copied.)"""
    (tmp_path / "wave.yaml").write_text(PLAN_MANIFEST)
    (tmp_path / "replies.yaml").write_text("replies: [{text: ok}]\n")
    (tmp_path / "personas").mkdir()
    (tmp_path / "personas" / "navigator.md").write_text("You plan.\n")
    (tmp_path / "src").mkdir()
    write_pipeline(tmp_path, "test-pipeline", PLAN)
    result = swell("run", "test-pipeline", "--dry-run", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for shown in (
        "A pipeline for the dry run",
        "step1  prompt",
        "step2  prompt  after step1",
        "persona navigator → adapter scripted",
        "persona craftsman → adapter scripted",
        "temperature 0.1",
        "temperature 0.7",
        "tools Read, Glob, Grep",
        "tools Read, Write, Edit, Bash",
        "denied Bash(rm -rf *)",
        "mount ./src → src (readonly)",
        "input step1:analysis as analysis.json",
        "artifact analysis (file: .agents/output/analysis.json)",
        "artifact code",
    ):
        assert shown in out, out


def test_run_of_an_unknown_pipeline(tmp_path: Path) -> None:
    """R:TestRunWithNonExistentPipeline: one clear error, nothing recorded."""
    (tmp_path / "wave.yaml").write_text(HEAD)
    result = swell("run", "nonexistent-pipeline-xyz", cwd=tmp_path)
    printed = result.stdout + result.stderr
    assert result.returncode != 0 and "nonexistent-pipeline-xyz" in printed
    assert "Traceback" not in printed


def test_from_step_that_is_not_in_the_pipeline(tmp_path: Path) -> None:
    """R:TestRunFromStepValidation: --from-step names a step the pipeline lacks."""
    (tmp_path / "wave.yaml").write_text(HEAD)
    write_pipeline(tmp_path, "p", PIPE % "  - {id: step1, type: command, script: 'true'}\n")
    assert swell("run", "p", cwd=tmp_path).returncode == 0
    result = swell("run", "p", "--from-step", "nonexistent-step", cwd=tmp_path)
    printed = result.stdout + result.stderr
    assert result.returncode != 0 and "nonexistent-step" in printed
    assert "Traceback" not in printed


T = "pipeline/types_test.go:TestHandoverConfig_EffectiveContracts/"
BOTH = """\
  - id: a
    type: command
    script: echo done
    handover:
      contract: {type: test_suite, command: "false"}
      contracts:
        - {type: test_suite, command: "true"}
"""


def test_plural_contracts_take_precedence_over_the_singular(tmp_path: Path) -> None:
    """T + plural_contracts_takes_precedence_over_singular: only `contracts` run, as in
    Wave; `swell validate` warns that `contract` is ignored."""
    (tmp_path / "wave.yaml").write_text(HEAD)
    write_pipeline(tmp_path, "p", PIPE % BOTH)
    checked = swell("validate", "p", cwd=tmp_path)
    assert checked.returncode == 0
    assert "`handover.contract` is ignored" in checked.stdout + checked.stderr
    result = swell("run", "p", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_singular_contract_runs_alone(tmp_path: Path) -> None:
    """T + singular_contract_wrapped_in_slice_when_plural_absent"""
    (tmp_path / "wave.yaml").write_text(HEAD)
    one = "  - id: a\n    type: command\n    script: echo\n"
    one += '    handover: {contract: {type: test_suite, command: "false"}}\n'
    write_pipeline(tmp_path, "p", PIPE % one)
    assert swell("run", "p", cwd=tmp_path).returncode == 1
