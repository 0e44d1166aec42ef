"""The harness's own pieces, without an agent CLI: the auto twin's decisions on
requests shaped as Claude Code sends them, its schema sampler, and the forge stand-ins."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from forge_standins import calls, install
from wave_harness import (
    WaveCheckoutError,
    check_wave_commit,
    first_error,
    placeholders,
    prerequisites,
)

from twins.auto import AutoModel, output_artifacts, schema_in_prompt
from twins.schema_sample import pattern_sample, sample, valid
from twins.server import Reply

PROMPT = """Explore the code.

## Output artifacts
Write these files (paths relative to your working directory):
- `.agents/output/findings.json` (findings; required, json)
- `report.md` (report; optional, markdown)
"""

FINDINGS = {
    "type": "object",
    "required": ["findings"],
    "properties": {
        "findings": {
            "type": "array",
            "minItems": 2,
            "items": {"$ref": "#/definitions/finding"},
        },
        "verdict": {"enum": ["approve", "revise"]},
    },
    "definitions": {
        "finding": {
            "type": "object",
            "required": ["id", "severity"],
            "properties": {
                "id": {"type": "string", "pattern": "^REV-[0-9]{3}$"},
                "severity": {"type": "string", "enum": ["critical", "minor"]},
                "score": {"type": "number", "minimum": 0, "maximum": 1},
                "url": {"type": "string", "format": "uri"},
            },
        }
    },
}


class _Req:
    """What AutoModel reads of a twin request: the parsed body."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body


def body(prompt: str, *turns: dict[str, Any], tools: tuple[str, ...] = ("Write", "Bash")) -> Any:
    messages = [{"role": "user", "content": [{"type": "text", "text": prompt}]}, *turns]
    return _Req({"messages": messages, "tools": [{"name": t} for t in tools]})


def answered(reply: Reply, error: bool = False) -> list[dict[str, Any]]:
    """The assistant turn `reply` gives and Claude Code's tool results for it."""
    uses = [
        {"type": "tool_use", "id": f"t{i}", "name": c.name, "input": c.input}
        for i, c in enumerate(reply.tool_calls)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": u["id"], "content": "ok", "is_error": error}
        for u in uses
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def test_sampled_documents_satisfy_their_schema() -> None:
    doc = sample(FINDINGS)
    assert valid(FINDINGS, doc)
    assert len(doc["findings"]) == 2 and doc["findings"][0]["id"] == "REV-000"
    assert doc["verdict"] == "approve" and doc["findings"][0]["url"].startswith("https://")


@pytest.mark.parametrize(
    "pattern",
    [
        r"^T[0-9]{2}$",
        r"^(RISK|PAT)-\d{3}$",
        r"^[a-z][a-z0-9-]*$",
        r"^https?://\S+$",
        r"^v\d+\.\d+$",
    ],
)
def test_pattern_samples_match(pattern: str) -> None:
    import re

    assert re.search(pattern, pattern_sample(pattern))


def test_outputs_are_read_from_the_prompt_section() -> None:
    outputs = output_artifacts(PROMPT)
    assert [(o.path, o.name, o.type) for o in outputs] == [
        (".agents/output/findings.json", "findings", "json"),
        ("report.md", "report", "markdown"),
    ]


def test_a_schema_in_the_prompt_is_used_and_counted() -> None:
    prompt = PROMPT + "\n## Contract\n`.agents/output/findings.json` must match:\n```json\n"
    prompt += json.dumps(FINDINGS) + "\n```\n"
    assert schema_in_prompt(prompt, ".agents/output/findings.json") == FINDINGS
    model = AutoModel()
    reply = model(body(prompt))  # type: ignore[arg-type]
    written = {c.input["file_path"]: c.input["content"] for c in reply.tool_calls}
    assert valid(FINDINGS, json.loads(written[".agents/output/findings.json"]))
    assert model.tally.schemas_from_prompt == 1 and model.tally.schemas_from_project == 0


def test_without_a_schema_in_the_prompt_the_project_is_read_and_counted(tmp_path: Path) -> None:
    (tmp_path / ".agents" / "pipelines").mkdir(parents=True)
    (tmp_path / "schema.json").write_text(json.dumps(FINDINGS))
    (tmp_path / ".agents" / "pipelines" / "p.yaml").write_text(
        "steps:\n  - id: s\n    output_artifacts: [{name: findings, path: .agents/output/findings.json}]\n"
        "    handover: {contract: {type: json_schema, schema_path: schema.json}}\n"
    )
    model = AutoModel(project_root=tmp_path)
    reply = model(body(PROMPT))  # type: ignore[arg-type]
    content = next(
        c.input["content"] for c in reply.tool_calls if "findings" in c.input["file_path"]
    )
    assert valid(FINDINGS, json.loads(content))
    assert model.schema_sources == [(".agents/output/findings.json", "project")]


def test_the_twin_writes_then_commits_then_finishes_from_the_conversation_alone() -> None:
    prompt = PROMPT + "\nStage and commit all changes with `git commit`.\n"
    model = AutoModel()
    first = model(body(prompt))  # type: ignore[arg-type]
    assert [c.name for c in first.tool_calls] == ["Write", "Write"]
    second = model(body(prompt, *answered(first)))  # type: ignore[arg-type]
    assert [c.name for c in second.tool_calls] == ["Bash"]
    assert "git commit" in second.tool_calls[0].input["command"]
    third = model(body(prompt, *answered(first), *answered(second)))  # type: ignore[arg-type]
    assert not third.tool_calls and third.text.startswith("Done.")


def test_a_refused_write_is_counted_and_tried_again_once() -> None:
    model = AutoModel()
    first = model(body(PROMPT))  # type: ignore[arg-type]
    refused = answered(first, error=True)
    second = model(body(PROMPT, *refused))  # type: ignore[arg-type]
    assert model.tally.tool_errors == 2
    assert {c.name for c in second.tool_calls} == {"Read"}


def test_reviews_pass_and_with_fail_first_the_first_review_of_a_step_fails() -> None:
    schema = {
        "type": "object",
        "required": ["verdict", "issues", "confidence", "summary"],
        "properties": {
            "verdict": {"enum": ["pass", "rework", "fail"]},
            "issues": {"type": "array", "items": {"type": "object"}},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "summary": {"type": "string"},
        },
    }
    prompt = "# Your answer\n\nThis is the work of step `plan` (visit 1)."
    tools = [{"name": "StructuredOutput", "input_schema": schema}]

    def ask(model: AutoModel) -> dict[str, Any]:
        req = _Req({"messages": [{"role": "user", "content": prompt}], "tools": tools})
        return model(req).tool_calls[0].input  # type: ignore[arg-type]

    assert ask(AutoModel())["verdict"] == "pass"
    strict = AutoModel(fail_first_review=True)
    assert [ask(strict)["verdict"], ask(strict)["verdict"]] == ["rework", "pass"]


def test_judges_pass_every_criterion() -> None:
    verdict = {
        "type": "object",
        "required": ["criterion", "pass", "reasoning"],
        "properties": {
            "criterion": {"type": "string"},
            "pass": {"type": "boolean"},
            "reasoning": {"type": "string"},
        },
    }
    schema = {
        "type": "object",
        "required": ["criteria_results", "summary"],
        "properties": {
            "criteria_results": {"type": "array", "items": verdict, "minItems": 2, "maxItems": 2},
            "summary": {"type": "string"},
        },
    }
    tools = [{"name": "StructuredOutput", "input_schema": schema}]
    req = _Req({"messages": [{"role": "user", "content": "step `s`"}], "tools": tools})
    answer = AutoModel()(req).tool_calls[0].input  # type: ignore[arg-type]
    assert [r["pass"] for r in answer["criteria_results"]] == [True, True]


def test_forge_stand_ins_answer_as_the_real_tools_do(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    bin_dir = install(tmp_path / "bin", log)

    def run(*argv: str) -> str:
        done = subprocess.run([str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    issue = json.loads(run("gh", "issue", "view", "7", "--repo", "o/r", "--json", "number,title"))
    assert set(issue) == {"number", "title"} and issue["number"] == 7
    assert run("gh", "pr", "view", "42", "--json", "headRefName", "--jq", ".headRefName") == (
        "fix/retry-delay\n"
    )
    assert run("glab", "mr", "create", "--title", "t").startswith("https://gitlab.com/")
    assert "diff --git" in run("gh", "pr", "diff", "42")
    assert run("go", "test", "./...").startswith("ok ")
    assert calls(log)[0] == ["gh", "issue", "view", "7", "--repo", "o/r", "--json", "number,title"]


def test_placeholders_of_wave_variables_are_told_from_prose() -> None:
    text = "run {{ input }} on {{forge.cli_tool}}; see {{ '<id>' }} and {{ gate.*.text }}"
    bad, prose = placeholders(text)
    assert bad == ["{{ input }}", "{{forge.cli_tool}}"]
    assert prose == ["{{ '<id>' }}", "{{ gate.*.text }}"]


def test_the_first_error_follows_a_failed_child_run() -> None:
    runs = {
        "r1": [
            {"type": "child.started", "step_id": "fan", "child_run_id": "c1"},
            {
                "type": "step.finished",
                "step_id": "fan",
                "outcome": "failure",
                "error": "child failed",
            },
        ],
        "c1": [
            {"type": "run.started", "pipeline": "audit"},
            {"type": "step.finished", "step_id": "scan", "outcome": "failure", "error": "bad JSON"},
        ],
    }
    assert first_error(runs, "r1") == "fan -> audit: scan: bad JSON"


def test_a_wave_checkout_at_another_commit_is_refused(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        check=True,
    )
    with pytest.raises(WaveCheckoutError, match="pinned to 6b82c89e"):
        check_wave_commit(tmp_path)


def test_a_resumed_session_is_answered_for_its_last_task() -> None:
    """A thread resumes the agent's session: earlier tasks and their writes come first."""
    earlier = body("## Output artifacts\n- `old.json` (old; required, json)\n")
    model = AutoModel()
    first = model(earlier)  # type: ignore[arg-type]
    done = [*answered(first), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    now = {"role": "user", "content": [{"type": "text", "text": PROMPT}]}
    resumed = _Req({**earlier.body, "messages": [*earlier.body["messages"], *done, now]})
    reply = model(resumed)  # type: ignore[arg-type]
    assert [c.input["file_path"] for c in reply.tool_calls] == [
        ".agents/output/findings.json",
        "report.md",
    ]


def test_without_a_structured_output_tool_the_verdict_is_the_answer_text() -> None:
    prompt = (
        "Evaluate the output of step `s` against these criteria:\n\n1. names a file\n"
        "2. has a summary\n\n## Content to evaluate: x\n\n1. not a criterion\n"
    )
    answer = json.loads(AutoModel()(body(prompt, tools=("Read",))).text)  # type: ignore[arg-type]
    assert [r["criterion"] for r in answer["criteria_results"]] == ["names a file", "has a summary"]
    assert answer["overall_pass"] is True and answer["score"] == 1.0
    review = "# Your answer\n\nAnswer with the one ReviewFeedback JSON object."
    strict = AutoModel(fail_first_review=True)
    assert json.loads(strict(body(review)).text)["verdict"] == "rework"  # type: ignore[arg-type]


def test_without_a_schema_the_prompts_example_document_is_written() -> None:
    prompt = (
        "Write `.agents/output/issue-context.json`:\n\n```json\n"
        '{"owner": "<owner>", "number": <int>, "labels": ["..."]}\n```\n\n'
        "## Output artifacts\n- `.agents/output/issue-context.json` (issue-context; required, json)\n"
    )
    model = AutoModel()
    reply = model(body(prompt))  # type: ignore[arg-type]
    written = json.loads(reply.tool_calls[0].input["content"])
    assert written == {"owner": "<owner>", "number": 1, "labels": ["..."]}
    assert model.tally.examples_used == 1


def test_a_pipeline_reading_another_pipelines_outputs_runs_after_it(tmp_path: Path) -> None:
    folder = tmp_path / ".agents" / "pipelines"
    folder.mkdir(parents=True)
    (folder / "child.yaml").write_text(
        "steps:\n  - id: a\n    memory:\n      inject_artifacts:\n"
        "        - {pipeline: parent, artifact: verdict}\n        - {pipeline: child, artifact: x}\n"
    )
    assert prerequisites(tmp_path, "child") == ["parent"]
    assert prerequisites(tmp_path, "parent") == []


def test_the_project_schema_is_only_the_asking_steps_own(tmp_path: Path) -> None:
    """An output of the same path checked in another step is no schema for this one."""
    (tmp_path / ".agents" / "pipelines").mkdir(parents=True)
    (tmp_path / "schema.json").write_text(json.dumps(FINDINGS))
    (tmp_path / ".agents" / "pipelines" / "other.yaml").write_text(
        "steps:\n  - id: s\n    exec: {source: 'Some other step that writes findings as JSON'}\n"
        "    output_artifacts: [{name: findings, path: .agents/output/findings.json}]\n"
        "    handover: {contract: {type: json_schema, schema_path: schema.json}}\n"
    )
    model = AutoModel(project_root=tmp_path)
    model(body(PROMPT))  # type: ignore[arg-type]
    assert model.schema_sources == [(".agents/output/findings.json", "none")]


# --------------------------------------------------------------------------- other protocols


class _Wire:
    """A request to the twin on `path` (the wire format is told by the path)."""

    def __init__(self, path: str, body: dict[str, Any]) -> None:
        self.path, self.body = path, body


def test_codex_writes_through_apply_patch_then_commits_in_its_shell() -> None:
    """Codex (OpenAI Responses) through a custom provider offers only its shell, which
    runs `apply_patch` itself; the conversation comes back as function_call items."""
    prompt = PROMPT + "\nStage and commit all changes with `git commit`.\n"
    tools = [{"type": "function", "name": "exec_command"}]
    context = "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]},
    ]
    model = AutoModel()
    first = model(_Wire("/v1/responses", {"input": items, "tools": tools}))  # type: ignore[arg-type]
    patches = [c.input["cmd"] for c in first.tool_calls]
    assert [c.name for c in first.tool_calls] == ["exec_command", "exec_command"]
    assert patches[0].startswith("apply_patch <<")
    assert "*** Add File: .agents/output/findings.json\n+{" in patches[0]
    for n, call in enumerate(first.tool_calls):
        arguments = json.dumps(call.input)
        items.append(
            {"type": "function_call", "name": call.name, "arguments": arguments, "call_id": f"c{n}"}
        )
        items.append(
            {"type": "function_call_output", "call_id": f"c{n}", "output": "Exit code: 0\nSuccess."}
        )
    second = model(_Wire("/v1/responses", {"input": items, "tools": tools}))  # type: ignore[arg-type]
    assert "git commit" in second.tool_calls[0].input["cmd"]
    assert model.tally.tool_errors == 0


def test_codex_structured_answers_are_the_final_message() -> None:
    schema = {
        "type": "object",
        "required": ["verdict"],
        "properties": {"verdict": {"enum": ["pass", "rework"]}},
    }
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "step `s`"}]}
    ]
    body = {
        "input": items,
        "tools": [],
        "text": {"format": {"type": "json_schema", "schema": schema}},
    }
    strict = AutoModel(fail_first_review=True)
    answers = [json.loads(strict(_Wire("/v1/responses", body)).text) for _ in range(2)]  # type: ignore[arg-type]
    assert answers == [{"verdict": "rework"}, {"verdict": "pass"}]


def test_gemini_and_opencode_use_their_own_file_tools() -> None:
    gemini = {
        "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
        "tools": [{"functionDeclarations": [{"name": "write_file"}]}],
        "systemInstruction": {"parts": [{"text": "persona"}]},
    }
    reply = AutoModel()(_Wire("/v1beta/models/m:streamGenerateContent", gemini))  # type: ignore[arg-type]
    assert {c.name for c in reply.tool_calls} == {"write_file"}
    assert "file_path" in reply.tool_calls[0].input
    chat = {
        "messages": [{"role": "user", "content": PROMPT}],
        "tools": [{"function": {"name": "write"}}],
    }
    reply = AutoModel()(_Wire("/v1/chat/completions", chat))  # type: ignore[arg-type]
    assert {c.name for c in reply.tool_calls} == {"write"} and "filePath" in reply.tool_calls[
        0
    ].input


def test_a_review_in_text_follows_the_schema_of_its_instructions() -> None:
    """Gemini and opencode answer reviews in text: as swell's ReviewFeedback schema in
    the system prompt says (its issues allow no other fields)."""
    from swell.contracts.review_prompt import SCHEMA, SYSTEM_PROMPT, ReviewFeedback

    system = SYSTEM_PROMPT.format(schema=json.dumps(SCHEMA))
    chat = {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "# What to review\nAnswer with the ReviewFeedback JSON."},
        ],
        "tools": [{"function": {"name": "read"}}],
    }
    strict = AutoModel(fail_first_review=True)
    first = ReviewFeedback.model_validate_json(strict(_Wire("/v1/chat/completions", chat)).text)  # type: ignore[arg-type]
    assert first.verdict == "rework" and first.issues
