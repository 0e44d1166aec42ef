"""A step kind and a contract type from a plugin, found through their entry points:
one module each and one entry-point line, no change to swell (tests/plugins/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import REPO, events, run_id_of, swell, write_pipeline

SITE = REPO / "tests" / "plugins" / "site"

PIPELINE = """
kind: WavePipeline
metadata: {name: plugged}
steps:
  - id: greet
    type: shout
    input: "hello {{ input }}"
    output_artifacts:
      - {name: greeting, path: greeting.txt, source: stdout}
    handover:
      contract:
        type: min_words
        source: greeting.txt
        min: MIN
"""


@pytest.fixture
def with_plugin() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SITE)}


def test_a_plugin_step_kind_and_contract_type_run(
    project: Path, with_plugin: dict[str, str]
) -> None:
    write_pipeline(project, "plugged", PIPELINE.replace("MIN", "2"))
    assert swell("validate", "plugged", cwd=project, env=with_plugin).returncode == 0
    result = swell("run", "plugged", "--input", "world", cwd=project, env=with_plugin)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "▶ greet  shout 'hello {{ input }}'" in result.stdout
    assert "HELLO WORLD" in result.stdout  # a kind with `progress: answer` shows its answer
    assert "✓ contract 1 min_words" in result.stdout
    evs = events(project, run_id_of(result.stdout))
    assert [e["contract_type"] for e in evs if e["type"] == "contract.passed"] == ["min_words"]


def test_a_plugin_contract_failure_is_a_contract_failure(
    project: Path, with_plugin: dict[str, str]
) -> None:
    write_pipeline(project, "plugged", PIPELINE.replace("MIN", "3"))
    result = swell("run", "plugged", "--input", "world", cwd=project, env=with_plugin)
    assert result.returncode == 1
    assert "greeting.txt has 2 words, fewer than 3" in result.stdout


def test_plugin_rules_and_settings_are_checked_at_their_lines(
    project: Path, with_plugin: dict[str, str]
) -> None:
    no_input = PIPELINE.replace('    input: "hello {{ input }}"\n', "")
    write_pipeline(project, "plugged", no_input.replace("MIN", "0"))
    result = swell("validate", "plugged", cwd=project, env=with_plugin)
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        ".agents/pipelines/plugged.yaml:5:5: shout step 'greet' needs `input`",
        ".agents/pipelines/plugged.yaml:13:14: min must be at least 1",
    ]
    typo = PIPELINE.replace("MIN", "2").replace("source: greeting.txt", "sauce: greeting.txt")
    write_pipeline(project, "plugged", typo)
    result = swell("validate", "plugged", cwd=project, env=with_plugin)
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        ".agents/pipelines/plugged.yaml:12:9: missing required field 'source'",
        ".agents/pipelines/plugged.yaml:13:9: unknown field 'sauce' (did you mean 'source'?)",
    ]


def test_without_the_plugin_its_types_are_unknown(project: Path) -> None:
    write_pipeline(project, "plugged", PIPELINE.replace("MIN", "2"))
    result = swell("validate", "plugged", cwd=project)
    assert result.returncode == 1
    assert (
        "unknown step type 'shout' (known: aggregate, branch, command, concurrency, "
        "conditional, gate, iterate, loop, matrix, pipeline, prompt)" in result.stderr
    )
    assert "unknown contract type 'min_words'" in result.stderr
