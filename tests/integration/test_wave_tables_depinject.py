"""Wave's dependency-injection tests (internal/pipeline/depinject_test.go), mirrored
through `swell run`: a step's dependencies' output artifacts are placed in its
workspace and named to it, as Wave places and names them. Case ids name the Wave
test; docs/conformance.md, "Wave's test tables"."""

from __future__ import annotations

from pathlib import Path

from conftest import swell, write_pipeline

D = "pipeline/depinject_test.go:"
MANIFEST = "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: deps}\n"
PIPE = """\
kind: WavePipeline
metadata: {name: deps}
steps:
  - id: fetch-pr
    type: command
    script: |
      mkdir -p out
      printf '{"pr": 1441}' > out/pr-context.json
    output_artifacts:
      - {name: pr-context, path: out/pr-context.json, type: json}
      - {name: notes, path: out/notes.md, required: false}
  - id: consume
    type: command
    dependencies: [fetch-pr]
    script: |
      {
      printf 'artifacts=%s\\n' "{{ artifacts.fetch-pr.pr-context }}"
      printf 'deps=%s\\n' "{{ deps.fetch-pr.pr-context }}"
      printf 'env=%s\\n' "$WAVE_DEP_FETCH_PR_PR_CONTEXT"
      printf 'dir=%s\\n' "$WAVE_DEPS_DIR"
      printf 'canonical=%s\\n' "$(cat .agents/artifacts/fetch-pr/pr-context.json)"
      printf 'alias=%s\\n' "$(cat .agents/output/pr-context.json 2>/dev/null)"
      } > "$SWELL_PROJECT_ROOT/seen.txt"
"""


def test_a_dependency_s_artifacts_are_placed_and_named(tmp_path: Path) -> None:
    """D:TestInjectDependencyArtifacts_CanonicalAndAlias, D:TestBuildDepEnvVars,
    D:TestResolveDependencyArtifacts_InMemoryArtifactPaths and
    D:TestResolveDependencyArtifacts_OptionalMissingNoError (`notes` is optional and
    never written): the copy at `.agents/artifacts/DEP/FILE`, the alias at
    `.agents/output/FILE`, `{{ artifacts.DEP.NAME }}` and `{{ deps.DEP.NAME }}` naming
    the copy, `WAVE_DEP_<DEP>_<NAME>` and `WAVE_DEPS_DIR` for commands."""
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    write_pipeline(tmp_path, "deps", PIPE)
    result = swell("run", "deps", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    seen = dict(line.split("=", 1) for line in (tmp_path / "seen.txt").read_text().splitlines())
    canonical = seen["dir"] + "/fetch-pr/pr-context.json"
    assert seen["dir"].endswith("/.agents/artifacts")
    assert seen["artifacts"] == seen["deps"] == seen["env"] == canonical
    assert seen["canonical"] == seen["alias"] == '{"pr": 1441}'


def test_a_required_artifact_that_is_missing_fails_the_producer(tmp_path: Path) -> None:
    """D:TestResolveDependencyArtifacts_RequiredMissingErrors: nothing to inject, and
    the run says which artifact is missing."""
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    text = PIPE.replace("printf '{\"pr\": 1441}' > out/pr-context.json", "true")
    text = text.replace("type: json}", "type: json, required: true}")
    write_pipeline(tmp_path, "deps", text)
    result = swell("run", "deps", cwd=tmp_path)
    assert result.returncode == 1
    assert "pr-context" in result.stdout + result.stderr
