"""Wave's contract semantics from the CLI: `source` defaulting to the first output,
agent_review's `warn` verdict and `diff_base`, test_suite in the project found by its
marker files, json_schema recovering JSON from what models really write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import events, run_id_of, swell, write_pipeline
from swell.contracts.json_recovery import NotJson, WrappedNotJson, recover

SCHEMA = '{"type": "object", "required": ["items"], "properties": {"items": {"type": "array"}}}'


def _replies(project: Path, replies: str) -> None:
    (project / "scripts" / "wave.yaml").write_text(replies)
    manifest = (project / "wave.yaml").read_text()
    manifest = manifest.replace(
        "script: scripts/impl-issue.yaml", "script: scripts/wave.yaml\n      calls: calls.jsonl"
    )
    (project / "wave.yaml").write_text(manifest)


def _calls(project: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def test_a_contract_without_source_checks_the_first_output(project: Path) -> None:
    write_pipeline(
        project,
        "first",
        """
kind: WavePipeline
metadata: {name: first}
steps:
  - id: write
    type: command
    script: "printf '' > empty.md; echo data > full.md"
    output_artifacts:
      - {name: empty, path: empty.md}
      - {name: full, path: full.md}
    handover:
      contract: {type: non_empty_file}
""",
    )
    result = swell("run", "first", cwd=project)
    assert result.returncode == 1, result.stdout
    assert "empty.md is empty" in result.stdout
    assert swell("validate", "first", cwd=project).returncode == 0


def test_json_schema_recovers_json_from_a_chatty_answer_and_says_so(project: Path) -> None:
    answer = 'Here is the result:\n```json\n{"items": [1, 2,],  // two\n}\n```\nDone!'
    (project / "answer.txt").write_text(answer)
    write_pipeline(
        project,
        "chatty",
        f"""
kind: WavePipeline
metadata: {{name: chatty}}
steps:
  - id: answer
    type: command
    script: cp "$SWELL_PROJECT_ROOT/answer.txt" out.json
    output_artifacts: [{{name: result, path: out.json, type: json}}]
    handover:
      contract: {{type: json_schema, schema: '{SCHEMA}'}}
""",
    )
    result = swell("run", "chatty", cwd=project)
    assert result.returncode == 0, result.stdout
    passed = [
        e for e in events(project, run_id_of(result.stdout)) if e["type"] == "contract.passed"
    ]
    assert passed[0]["note"] == (
        "JSON recovered: took the JSON from a code block, removed comments, removed trailing commas"
    )
    # and with recovery turned off the same answer fails
    path = project / ".agents" / "pipelines" / "chatty.yaml"
    path.write_text(path.read_text().replace("schema: '", "allow_recovery: false, schema: '"))
    strict = swell("run", "chatty", cwd=project)
    assert strict.returncode == 1 and "is not valid JSON" in strict.stdout


@pytest.mark.parametrize(
    ("text", "level", "value", "steps"),
    [
        ('{"a": 1}', "progressive", {"a": 1}, []),
        ('Sure! {"a": "x // y"} hope it helps', "progressive", {"a": "x // y"},
         ["took the JSON out of the text around it"]),
        ("{name: 'x', ok: True}", "progressive", {"name": "x", "ok": True},
         ["converted single-quoted strings", "quoted bare keys"]),
        ('{"a": [1, 2', "aggressive", {"a": [1, 2]}, ["closed unbalanced brackets"]),
        ('{"a": 1 "b": "x"\n "c": ["p" "q"] "d": {"e": true} "f": [{"g": 1} {"h": 2}]}',
         "progressive", {"a": 1, "b": "x", "c": ["p", "q"], "d": {"e": True},
                         "f": [{"g": 1}, {"h": 2}]}, ["inserted missing commas"]),
        # Wave's envelope: error_type, raw_output and one more of its indicators
        ('{"error_type": "x", "raw_output": "{\\"a\\": 1}", "step_id": "s"}', "progressive",
         {"a": 1}, ["unwrapped `raw_output` from an error wrapper"]),
        ('{"error_type": "x", "raw_output": "{\\"a\\": 1}", "attempts": 2}', "progressive",
         {"a": 1}, ["unwrapped `raw_output` from an error wrapper"]),
        # `message` is none of them: a document that happens to hold these keys
        ('{"error_type": "x", "raw_output": "{}", "message": "m", "attempts": 0}', "progressive",
         {"error_type": "x", "raw_output": "{}", "message": "m", "attempts": 0}, []),
    ],
)  # fmt: skip
def test_recovery_levels(text: str, level: Any, value: Any, steps: list[str]) -> None:
    assert recover(text, level) == (value, steps)


def test_a_wrapper_around_text_that_is_not_json_is_no_document() -> None:
    with pytest.raises(WrappedNotJson, match="whose raw_output is not JSON"):
        recover('{"error_type": "timeout", "raw_output": "I ran out of time", "final_error": "t"}')


def test_recovery_stops_at_its_level() -> None:
    with pytest.raises(NotJson):
        recover("{name: 'x'}", "conservative")
    with pytest.raises(NotJson):
        recover('{"a": [1, 2', "progressive")


def test_agent_review_warn_passes_with_a_recorded_warning(project: Path) -> None:
    _replies(
        project,
        """
replies:
  - step: implement
    text: done
    files: {greeting.py: "def greet(n):\\n    return n\\n"}
  - step: implement.review
    text: |
      Looks fine overall.
      {"verdict": "warn", "issues": [{"severity": "minor", "description": "no docstring"}],
       "suggestions": [], "confidence": 0.7, "summary": "Acceptable, lacks a docstring."}
""",
    )
    write_pipeline(
        project,
        "warned",
        """
kind: WavePipeline
metadata: {name: warned}
steps:
  - id: implement
    persona: developer
    exec: {type: prompt, source: "Write greeting.py"}
    handover:
      contract:
        type: agent_review
        persona: reviewer
        context: [{source: git_diff, diff_base: HEAD}]
""",
    )
    result = swell("run", "warned", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_events = events(project, run_id_of(result.stdout))
    passed = [e for e in run_events if e["type"] == "contract.passed"]
    assert passed[0]["note"] == (
        "reviewer 'reviewer' passed the work with a warning: Acceptable, lacks a docstring."
    )
    review = next(e for e in run_events if e["type"] == "review.completed")
    assert review["issues"][0]["detail"] == "no docstring"
    prompt = _calls(project)[1]["prompt"]
    assert "git diff against HEAD)" in prompt and "+def greet(n):" in prompt


def test_test_suite_runs_in_the_project_found_by_its_markers(project: Path) -> None:
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    write_pipeline(
        project,
        "marked",
        """
kind: WavePipeline
metadata: {name: marked}
steps:
  - id: build
    type: command
    workspace:
      mount: [{source: ./, target: /repo}]
    script: echo built > built.txt
    handover:
      contracts:
        - {type: test_suite, command: "test -f pyproject.toml && test -f built.txt"}
        - {type: test_suite, command: "test -d repo", dir: .}
""",
    )
    result = swell("run", "marked", cwd=project)
    assert result.returncode == 0, result.stdout


def test_a_failed_contract_is_retried_with_an_attempt_context(project: Path) -> None:
    _replies(
        project,
        """
replies:
  - step: implement
    text: "I wrote the list, I think."
    files: {out.json: '{"wrong": true}'}
  - step: implement
    text: "Fixed."
    files: {out.json: '{"items": [1]}'}
""",
    )
    write_pipeline(
        project,
        "again",
        f"""
kind: WavePipeline
metadata: {{name: again}}
steps:
  - id: implement
    persona: developer
    retry: {{policy: standard}}
    exec: {{type: prompt, source: "Write out.json"}}
    output_artifacts: [{{name: result, path: out.json, type: json}}]
    handover:
      contracts:
        - {{type: json_schema, schema: '{SCHEMA}'}}
""",
    )
    result = swell("run", "again", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    second = _calls(project)[1]["prompt"]
    assert second.startswith("RETRY CONTEXT (attempt 2 of 3)\n\nYour previous attempt failed")
    assert "$: 'items' is a required property" in second
    assert "The end of your previous output:\n```\nI wrote the list, I think.\n```" in second
    assert "do not start over" in second
