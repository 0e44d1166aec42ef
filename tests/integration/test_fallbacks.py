"""`runtime.fallbacks`: a rate-limited adapter hands the visit to the next in its
chain (Wave: only on rate_limit); other failures do not fall back."""

from __future__ import annotations

from pathlib import Path

from conftest import run_id_of, swell, swell_json, write_pipeline

MANIFEST = """apiVersion: v1
kind: WaveManifest
metadata: {name: fallbacks}
adapters:
  busy: {type: scripted, options: {script: busy.yaml}}
  spare: {type: scripted, options: {script: spare.yaml}}
  broken: {type: scripted, options: {script: broken.yaml}}
personas:
  writer: {adapter: busy}
  fixer: {adapter: broken}
runtime:
  fallbacks:
    busy: [spare]
    broken: [spare]
"""
PIPELINE = """kind: WavePipeline
metadata: {name: write}
steps:
  - id: write
    persona: %s
    exec: {type: prompt, source: "write notes"}
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "busy.yaml").write_text(
        "replies:\n  - {fail: '429: slow down', error_kind: rate_limit}\n"
    )
    (root / "broken.yaml").write_text("replies:\n  - {fail: 'bad request', error_kind: crash}\n")
    (root / "spare.yaml").write_text(
        "replies:\n  - {text: 'notes written', files: {notes.md: 'notes'}, "
        "usage: {input_tokens: 10, output_tokens: 2}}\n"
    )
    return root


def test_a_rate_limited_adapter_falls_back_to_the_next(tmp_path: Path) -> None:
    root = _project(tmp_path)
    write_pipeline(root, "write", PIPELINE % "writer")
    result = swell("run", "write", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "adapter 'busy' is rate-limited; falling back to 'spare'" in result.stdout
    status = swell_json("status", run_id_of(result.stdout), cwd=root)
    assert status["status"] == "succeeded"


def test_other_failures_do_not_fall_back(tmp_path: Path) -> None:
    root = _project(tmp_path)
    write_pipeline(root, "write", PIPELINE % "fixer")
    result = swell("run", "write", cwd=root)
    assert result.returncode == 1
    assert "falling back" not in result.stdout and "bad request" in result.stdout


def test_an_unknown_fallback_adapter_is_a_validation_error(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "wave.yaml").write_text(MANIFEST.replace("busy: [spare]", "busy: [spar]"))
    write_pipeline(root, "write", PIPELINE % "writer")
    result = swell("validate", cwd=root)
    assert result.returncode != 0
    assert "wave.yaml:" in result.stdout + result.stderr
    assert (
        "unknown fallback adapter 'spar' (did you mean 'spare'?)" in result.stdout + result.stderr
    )
