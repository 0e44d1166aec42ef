"""The agent_review contract with a scripted `run_agent` (the engine's side of the boundary).

The workspace is a real git directory workspace, so the diff the reviewer sees is
the one the engine would hand it.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from swell.contracts import review_prompt
from swell.contracts.agent_review import TYPE, AgentReviewSettings, config_problems
from swell.contracts.base import (
    AgentAnswer,
    AgentCall,
    ContractContext,
    ContractResult,
    ReviewFeedback,
    ReviewStats,
)
from swell.contracts.review_prompt import extract_json
from swell.manifest.models import Step
from swell.workspace.workspace import open_directory

PASS = {"verdict": "pass", "issues": [], "suggestions": [], "confidence": 0.9, "summary": "Fine."}
REWORK = {
    "verdict": "rework",
    "issues": [
        {"severity": "critical", "file": "calc.py", "line": 2, "detail": "divides by zero"},
        {"severity": "major", "file": "calc.py", "line": None, "detail": "no tests"},
        {"severity": "major", "file": None, "line": None, "detail": "no docstring"},
        {"severity": "minor", "detail": "naming"},
    ],
    "suggestions": ["add a test for 0"],
    "confidence": 0.8,
    "summary": "The division\nis unsafe.",
}


def ok(structured: Any = None, text: str = "", **fields: Any) -> AgentAnswer:
    values: dict[str, Any] = {"tokens_in": 1000, "tokens_out": 50, "cost_usd": 0.01}
    values |= {"adapter": "claude", "model": "claude-sonnet-4-5", **fields}
    return AgentAnswer(success=True, text=text, structured=structured, **values)


def failed(kind: str, error: str = "it broke") -> AgentAnswer:
    return AgentAnswer(success=False, error=error, error_kind=kind, adapter="claude")


@dataclass
class FakeReviewer:
    """`run_agent` as the engine provides it: replies in order, every call recorded."""

    replies: list[AgentAnswer | Exception]
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, call: AgentCall) -> AgentAnswer:
        self.calls.append(
            {"persona": call.persona, "system": call.system, "prompt": call.prompt,
             "schema": call.json_schema, "timeout": call.timeout_s, "model": call.model}
        )  # fmt: skip
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def stats(result: ContractResult) -> ReviewStats:
    assert result.review is not None
    return result.review


@dataclass
class Setup:
    ctx: ContractContext[AgentReviewSettings]
    reviewer: FakeReviewer
    workspace: Path
    project: Path

    def run(self) -> ContractResult:
        return asyncio.run(TYPE.check(self.ctx))

    @property
    def prompt(self) -> str:
        return str(self.reviewer.calls[0]["prompt"])


@pytest.fixture
def make(tmp_path: Path) -> Any:
    def build(
        replies: list[AgentAnswer | Exception] | None = None,
        *,
        step_persona: str | None = "coder",
        artifacts: dict[str, str] | None = None,
        files: dict[str, str] | None = None,
        **contract: Any,
    ) -> Setup:
        project = tmp_path / "project"
        project.mkdir(exist_ok=True)
        ws = open_directory(tmp_path / "ws")
        for name, text in (files or {}).items():
            (ws.path / name).parent.mkdir(parents=True, exist_ok=True)
            (ws.path / name).write_text(text)
        fake = FakeReviewer(list(replies or []))
        namespace = {"input": "add a divide() function", "step": {"id": "implement"}}
        ctx = ContractContext(
            settings=AgentReviewSettings.model_validate(contract),
            index=0,
            step=Step(id="implement", persona=step_persona),
            workspace=ws.path,
            project_root=project,
            run_dir=tmp_path / "runs" / "R",
            visit=1,
            namespace=namespace,
            command_env={},
            artifacts=artifacts or {},
            stdout=None,
            diff=ws.diff,
            default_timeout=300.0,
            run_agent=fake,
        )
        return Setup(ctx, fake, ws.path, project)

    return build


# --------------------------------------------------------------------------- verdicts


def test_pass_attaches_feedback_and_usage(make: Any) -> None:
    setup = make([ok(PASS)], reviewer="critic", files={"calc.py": "x = 1\n"})
    result = setup.run()

    assert result.passed and result.error is None and not result.unavailable
    assert result.feedback == ReviewFeedback.model_validate(PASS)
    review = result.review
    assert review is not None
    assert review.reviewer == "critic" and review.attempts == 1
    assert (review.adapter, review.model) == ("claude", "claude-sonnet-4-5")
    assert (review.tokens_in, review.tokens_out, review.cost_usd) == (1000, 50, 0.01)
    assert review.duration_ms >= 0
    call = setup.reviewer.calls[0]
    assert call["persona"] == "critic" and call["model"] is None and call["timeout"] == 300.0
    assert call["schema"] == ReviewFeedback.model_json_schema()
    for words in ('"rework"', '"critical"', "confidence", "one JSON object", "Do not change"):
        assert words in call["system"]
    assert '"verdict"' in call["system"]  # the schema itself is in the instructions
    assert '"title"' not in call["system"] and '"$ref": "#/$defs/ReviewIssue"' in call["system"]


@pytest.mark.parametrize("verdict", ["rework", "fail"])
def test_rework_and_fail_attach_feedback_and_summarise(make: Any, verdict: str) -> None:
    setup = make([ok({**REWORK, "verdict": verdict})], reviewer="critic")
    result = setup.run()

    assert not result.passed and not result.unavailable
    assert result.feedback is not None and len(result.feedback.issues) == 4
    assert result.error == (
        f"{verdict} by reviewer 'critic' (1 critical, 2 major issue(s), 1 minor): "
        "The division is unsafe."
    )


def test_wave_spelling_persona_names_the_reviewer(make: Any) -> None:
    setup = make([ok(PASS)], persona="auditor")
    assert setup.run().passed
    assert setup.reviewer.calls[0]["persona"] == "auditor"


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "answer",
    [
        ok(text=json.dumps(PASS)),
        ok(text=f"Here is my review:\n```json\n{json.dumps(PASS, indent=2)}\n```\nThanks."),
        ok(text=f"Verdict follows {json.dumps(PASS)} -- done"),
        ok(structured=json.dumps(PASS), text="ignored"),
        ok(structured=PASS, text="not json at all"),
    ],
    ids=["plain-text", "fenced", "embedded", "structured-string", "structured-wins"],
)
def test_structured_or_text_answers_parse(make: Any, answer: AgentAnswer) -> None:
    result = make([answer], reviewer="critic").run()
    assert result.passed and result.feedback is not None, result.error
    assert stats(result).attempts == 1


def test_malformed_answer_is_retried_once_with_the_problem(make: Any) -> None:
    setup = make([ok(text="Looks fine to me!"), ok(PASS, tokens_in=1200)], reviewer="critic")
    result = setup.run()

    assert result.passed, result.error
    assert stats(result).attempts == 2
    assert stats(result).tokens_in == 2200 and stats(result).tokens_out == 100
    first, second = (c["prompt"] for c in setup.reviewer.calls)
    assert "not valid" not in first
    assert second.startswith(first)
    assert "Your previous answer was not valid: the answer contains no JSON object" in second
    assert "Looks fine to me!" in second  # the reviewer sees what it said


def test_schema_violation_names_the_field(make: Any) -> None:
    bad = {**PASS, "verdict": "approve", "confidence": 7}
    setup = make([ok(bad), ok(PASS)], reviewer="critic")
    assert setup.run().passed
    retry = setup.reviewer.calls[1]["prompt"]
    assert "does not match the ReviewFeedback schema" in retry
    assert "verdict: Input should be 'pass', 'rework' or 'fail'" in retry
    assert "confidence: Input should be less than or equal to 1" in retry


def test_unparseable_output_from_the_adapter_is_retried(make: Any) -> None:
    garbled = failed("unparseable_output", "claude: the answer gave no structured output")
    setup = make([garbled, ok(PASS)], reviewer="critic")
    assert setup.run().passed
    assert "gave no structured output" in setup.reviewer.calls[1]["prompt"]


def test_malformed_twice_fails_naming_the_problem(make: Any) -> None:
    setup = make([ok(text="nope"), ok({"verdict": "pass"})], reviewer="critic")
    result = setup.run()

    assert not result.passed and not result.unavailable and result.feedback is None
    assert result.error is not None
    assert result.error.startswith("reviewer 'critic' gave no valid ReviewFeedback in 2 attempts")
    assert "summary: Field required" in result.error
    assert stats(result).attempts == 2


def test_extract_json_edge_cases() -> None:
    assert extract_json('```\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('[1, 2] then {"b": {"c": 2}} and {"d": 3}') == {"b": {"c": 2}}
    with pytest.raises(ValueError, match="empty"):
        extract_json("  \n")
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("[1, 2, 3]")


# --------------------------------------------------------------------------- the prompt


def test_context_items_in_order_with_criteria_rendered(make: Any, tmp_path: Path) -> None:
    upstream = tmp_path / "workspaces" / "upstream" / "plan.md"  # another step's workspace
    upstream.parent.mkdir(parents=True)
    upstream.write_text("PLAN: write divide() and a test\n")
    setup = make(
        [ok(PASS)],
        reviewer="critic",
        files={"calc.py": "def divide(a, b):\n    return a / b\n", "notes/spec.md": "SPEC TEXT\n"},
        artifacts={"plan": str(upstream), "spec": "notes/spec.md"},
        criteria_path="review/{{ step.id }}.md",
        criteria=["Tests cover {{ input }}", "No prints"],
        context=[{"artifact": "plan"}, {"source": "git_diff"}, {"source": "artifact", "artifact": "spec"},
                 {"artifact": "design"}],
        source="calc.py",
    )  # fmt: skip
    (setup.project / "review").mkdir()
    (setup.project / "review" / "implement.md").write_text("The task was: {{ input }}.\n")
    result = setup.run()
    assert result.passed, result.error

    prompt = setup.prompt
    order = [
        "# Review criteria",
        "The task was: add a divide() function.",
        "- Tests cover add a divide() function",
        "- No prints",
        f"## Artifact `plan` ({upstream})",
        "PLAN: write divide() and a test",
        "## Changes in the workspace (git diff)",
        "+def divide(a, b):",
        "## Artifact `spec` (notes/spec.md)",
        "```\nSPEC TEXT\n```",
        "## Artifact `design`",
        "(not available: no step produced an artifact of this name)",
        "## File under review: calc.py",
        "    return a / b",
        "# Your answer",
    ]
    at = 0
    for part in order:  # each part comes after the one before
        found = prompt.find(part, at)
        assert found >= 0, f"{part!r} missing after position {at}:\n{prompt}"
        at = found + len(part)
    assert "```diff\n" in prompt
    assert any("artifact 'design' is not available" in note for note in setup.ctx.notes)


def test_empty_context_defaults_to_the_diff_and_the_source(make: Any) -> None:
    setup = make(
        [ok(PASS)], reviewer="critic", files={"out/report.md": "REPORT BODY\n"},
        source="out/{{ step.id }}.md",
    )  # fmt: skip
    (setup.workspace / "out" / "implement.md").write_text("RENDERED SOURCE\n")
    setup.run()
    prompt = setup.prompt
    assert "## Changes in the workspace (git diff)" in prompt
    assert "+REPORT BODY" in prompt
    assert "## File under review: out/implement.md\n\n```\nRENDERED SOURCE\n```" in prompt
    assert review_prompt.DEFAULT_CRITERIA in prompt  # no criteria given: the generic one


def test_long_diff_is_capped_and_says_so(make: Any) -> None:
    setup = make(
        [ok(PASS)], reviewer="critic", files={"big.txt": "line\n" * 1000},
        context=[{"source": "git_diff", "max_size": 500}],
    )  # fmt: skip
    setup.run()
    assert "(truncated: the first 500 of " in setup.prompt
    assert setup.prompt.count("+line") < 120


def test_empty_diff_and_missing_source_are_noted(make: Any) -> None:
    setup = make([ok(PASS)], reviewer="critic", source="nothing-here.md")
    assert setup.run().passed
    assert "(no changes)" in setup.prompt
    assert "(not available: does not exist)" in setup.prompt
    assert any("nothing-here.md" in note for note in setup.ctx.notes)


def test_a_diff_that_cannot_be_taken_is_noted(make: Any) -> None:
    setup = make([ok(PASS)], reviewer="critic")

    def broken() -> str:
        raise RuntimeError("workspace has no base to diff against")

    setup.ctx.diff = broken
    assert setup.run().passed
    assert "(not available: workspace has no base to diff against)" in setup.prompt


def test_fences_in_content_do_not_close_the_block(make: Any) -> None:
    setup = make([ok(PASS)], reviewer="critic", files={"doc.md": "```python\nx = 1\n```\n"},
                 source="doc.md")  # fmt: skip
    setup.run()
    assert "````\n```python\nx = 1\n```\n````" in setup.prompt


def test_timeout_model_and_budget(make: Any) -> None:
    setup = make(
        [ok(PASS, tokens_in=9000, tokens_out=800)],
        reviewer="critic", timeout="2m", model="claude-opus-4-1", max_tokens=500, token_budget=5000,
    )  # fmt: skip
    result = setup.run()

    assert result.passed  # budgets are advice: going over is a note, not a failure
    call = setup.reviewer.calls[0]
    assert call["timeout"] == 120.0 and call["model"] == "claude-opus-4-1"
    assert "Keep the answer under 500 tokens." in call["prompt"]
    assert result.details["over_budget"] is True
    notes = " | ".join(setup.ctx.notes)
    assert "800 tokens, over max_tokens 500" in notes
    assert "used 9800 tokens, over token_budget 5000" in notes


def test_review_record_is_written(make: Any) -> None:
    setup = make([ok(text="??"), ok(PASS)], reviewer="critic")
    result = setup.run()
    record = json.loads(Path(stats(result).record or "").read_text())
    assert Path(stats(result).record or "").name == "implement.v1.c0.json"
    assert [a["text"] for a in record["attempts"]] == ["??", ""]
    assert record["feedback"]["verdict"] == "pass"


# --------------------------------------------------------------------------- unavailable


@pytest.mark.parametrize("fail_open", [True, False])
@pytest.mark.parametrize(
    "reply",
    [RuntimeError("adapter 'claude' is not configured"), failed("auth", "claude: invalid x-api-key"),
     failed("timeout", "claude: no result within 300s"), failed("binary_missing", "no claude")],
    ids=["raises", "auth", "timeout", "binary-missing"],
)  # fmt: skip
def test_unavailable_reviewer_obeys_fail_open(
    make: Any, fail_open: bool, reply: AgentAnswer | Exception
) -> None:
    setup = make([reply], reviewer="critic", fail_open=fail_open)
    result = setup.run()

    assert result.unavailable and result.feedback is None
    assert result.passed is fail_open
    assert stats(result).attempts == 1  # an unreachable reviewer is not asked twice
    reason = str(reply) if isinstance(reply, Exception) else str(reply.error)
    if fail_open:
        assert result.error is None
        assert setup.ctx.notes == [
            f"reviewer 'critic' unavailable: {reason}; passing because fail_open"
        ]
    else:
        assert result.error is not None
        assert result.error.startswith(f"reviewer 'critic' unavailable: {reason}")
        assert "fail_open" in result.error


def test_other_reviewer_failures_are_failures_even_with_fail_open(make: Any) -> None:
    reply = failed("context_exhausted", "prompt is too long")
    result = make([reply], reviewer="critic", fail_open=True).run()
    assert not result.passed and not result.unavailable
    assert result.error == "reviewer 'critic' could not review: prompt is too long"


def test_no_way_to_run_an_agent_is_unavailable(make: Any) -> None:
    setup = make(reviewer="critic")
    setup.ctx.run_agent = None
    result = setup.run()
    assert result.unavailable and not result.passed


# --------------------------------------------------------------------------- settings


def test_self_review_is_refused(make: Any) -> None:
    setup = make([ok(PASS)], reviewer="coder", step_persona="coder")
    result = setup.run()
    assert not result.passed and not setup.reviewer.calls
    assert (
        result.error is not None
        and "'coder' is the persona that did step 'implement'" in result.error
    )


def test_no_reviewer_is_a_clear_error(make: Any) -> None:
    setup = make([ok(PASS)])
    result = setup.run()
    assert not result.passed and not setup.reviewer.calls
    assert result.error == (
        "agent_review: agent_review needs a reviewer persona: set `reviewer` (or `persona`)"
    )


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"criteria_path": "missing.md"}, "criteria_path missing.md does not exist"),
        ({"criteria_path": "../outside.md"}, "criteria_path: path '../outside.md' escapes"),
        ({"source": "../../etc/passwd"}, "source: path '../../etc/passwd' escapes"),
    ],
)
def test_bad_paths_fail_before_the_reviewer_runs(
    make: Any, settings: dict[str, Any], problem: str
) -> None:
    setup = make([ok(PASS)], reviewer="critic", **settings)
    result = setup.run()
    assert not result.passed and not result.unavailable and not setup.reviewer.calls
    assert result.error is not None and problem in result.error


def test_config_problems() -> None:
    contract = AgentReviewSettings.model_validate(
        {
            "timeout": "soon",
            "max_tokens": -1,
            "context": [
                {"source": "git_diff"},
                {"artifact": "plan", "max_size": 100},
                {"source": "stdout"},
                {"source": "artifact"},
                {"artifact": "x", "source": "git_diff"},
                {"source": "git_diff", "max_size": -1},
                {"source": "git_diff", "lines": 3},
            ],
        }
    )
    assert config_problems(contract) == [
        "agent_review needs a reviewer persona: set `reviewer` (or `persona`)",
        "timeout: invalid duration 'soon' (use e.g. 30s, 5m, 2h)",
        "max_tokens cannot be negative (0 or leaving it out: no limit)",
        "context[2]: unknown context source 'stdout' (use `source: git_diff` or `artifact: NAME`)",
        "context[3]: `source: artifact` needs `artifact: NAME`",
        "context[4]: give either `artifact: NAME` or `source: git_diff`, not both",
        "context[5]: max_size must be a positive number of characters",
        "context[6]: unknown key(s) lines",
    ]
    fine = AgentReviewSettings.model_validate(
        {"persona": "critic", "timeout": 90, "token_budget": 0}  # Wave's "no budget"
    )
    assert config_problems(fine) == []


def test_an_artifact_outside_the_run_s_workspaces_is_not_shown(make: Any, tmp_path: Path) -> None:
    """An artifact's path can be rendered from what a step wrote; one that lands outside
    the workspaces (a secret in the home directory, a link out of the workspace) is not
    put in front of the reviewer."""
    secret = tmp_path / "home" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY MATERIAL\n")
    setup = make(
        [ok(PASS)],
        reviewer="critic",
        artifacts={"abs": str(secret), "rel": "../home/id_rsa", "link": "key"},
        context=[{"artifact": "abs"}, {"artifact": "rel"}, {"artifact": "link"}],
    )
    (setup.workspace / "key").symlink_to(secret)
    os.symlink(secret.parent, setup.workspace / "home-link")
    setup.ctx.artifacts["dir"] = "home-link/id_rsa"
    setup.ctx.settings.context.append({"artifact": "dir"})
    result = setup.run()
    assert result.passed, result.error
    assert "PRIVATE KEY MATERIAL" not in setup.prompt
    for name in ("abs", "rel", "link", "dir"):
        assert any(f"artifact '{name}'" in n and "outside" in n for n in setup.ctx.notes), (
            name,
            setup.ctx.notes,
        )
