"""The claude adapter against the real Claude Code CLI talking to an Anthropic twin.

Each test gets its own HOME (so ~/.claude and ~/.claude.json are never the user's)
and points the CLI at the twin with ANTHROPIC_BASE_URL and a dummy API key. Tests
that need no real CLI (fake binaries, argv building) are not marked `agent_cli`.
What every CLI adapter does (crash, garbage, missing binary, timeout, rate limit,
resume, permissions) is tested once for all in test_cli_conformance.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_clis import cli_path, drive, fake_binary
from cli_setups import claude_adapter as adapter
from cli_setups import claude_request as request
from cli_setups import claude_texts as texts
from swell.adapters.base import (
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
)
from twins.server import Reply, ToolCall, Twin

real_cli = pytest.mark.agent_cli


@real_cli
def test_write_tool_writes_the_file_and_usage_and_session_are_read(tmp_path: Path) -> None:
    write = ToolCall("Write", {"file_path": "notes/hello.txt", "content": "hello from the twin\n"})
    replies = [
        Reply(
            tool_calls=[write],
            usage={
                "input_tokens": 120,
                "output_tokens": 30,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 400,
            },
        ),
        Reply(
            text="Wrote notes/hello.txt.",
            usage={
                "input_tokens": 50,
                "output_tokens": 8,
                "cache_read_input_tokens": 1400,
                "cache_creation_input_tokens": 60,
            },
        ),
    ]
    with Twin(replies, protocols=("anthropic",)) as twin:
        req = request(
            tmp_path,
            twin,
            prompt="Create notes/hello.txt",
            system_prompt="You are the PERSONA-MARKER writer.",
            model="claude-sonnet-4-5",
        )
        events, result = drive(adapter(tmp_path, cli_path("claude")), req)

    assert result.success, result.error
    assert (req.workspace / "notes" / "hello.txt").read_text() == "hello from the twin\n"
    assert result.files_changed == ["notes/hello.txt"]
    # the call id is the CLI's own
    assert ("Write", "notes/hello.txt") in [
        (e.name, e.target) for e in events if isinstance(e, AgentToolCall)
    ]
    assert AgentText("Wrote notes/hello.txt.") in events
    assert result.text == "Wrote notes/hello.txt."

    sessions = [e.session_id for e in events if isinstance(e, AgentSessionStarted)]
    assert sessions and sessions[0] == result.session_id
    assert (tmp_path / "home" / ".claude" / "projects").is_dir()  # sessions live in our HOME

    u = result.usage
    assert (u.input_tokens, u.output_tokens) == (170, 38)
    assert (u.cache_read_tokens, u.cache_write_tokens) == (2400, 460)
    assert u.cost_usd is not None and u.cost_usd > 0
    turns = [e.usage for e in events if isinstance(e, AgentUsageUpdate)]
    assert [(t.input_tokens, t.cache_read_tokens, t.cache_write_tokens) for t in turns] == [
        (120, 1000, 400),
        (50, 1400, 60),
    ]

    calls = twin.model_calls
    assert len(calls) == 2
    first = calls[0].body
    assert first["model"] == "claude-sonnet-4-5" and first["stream"] is True
    assert "Create notes/hello.txt" in texts(first)
    assert "PERSONA-MARKER" in str(first["system"])
    assert "You are an agent working with the user" in str(first["system"])  # appended to it
    assert calls[0].headers["x-api-key"] == "dummy"


@real_cli
def test_json_schema_answer_is_parsed(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
        "required": ["verdict", "score"],
    }
    answer = ToolCall("StructuredOutput", {"verdict": "pass", "score": 7})
    with Twin([Reply(tool_calls=[answer])], protocols=("anthropic",)) as twin:
        req = request(tmp_path, twin, "Judge it", json_schema=schema, allowed_tools=["Read"])
        _, result = drive(adapter(tmp_path, cli_path("claude")), req)

    assert result.success, result.error
    assert result.structured == {"verdict": "pass", "score": 7}
    tools = {t["name"]: t for t in twin.model_calls[0].body["tools"]}
    assert tools["StructuredOutput"]["input_schema"] == schema


@real_cli
def test_broken_stream_falls_back_to_a_non_streaming_call(tmp_path: Path) -> None:
    replies = [Reply(garbage=b"data: {broken\n\n"), Reply(text="recovered")]
    with Twin(replies, protocols=("anthropic",)) as twin:
        _, result = drive(adapter(tmp_path, cli_path("claude")), request(tmp_path, twin))

    assert result.success and result.text == "recovered", result.error
    assert [call.body["stream"] for call in twin.model_calls] == [True, False]


@real_cli
@pytest.mark.parametrize(
    ("status", "kind", "message", "expected"),
    [
        (401, "authentication_error", "invalid x-api-key", "auth"),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 250000 tokens > 200000",
            "context_exhausted",
        ),
        (500, "api_error", "internal", "crash"),
    ],
)
def test_api_errors_are_classified(
    tmp_path: Path, status: int, kind: str, message: str, expected: str
) -> None:
    error = Reply(error=(status, {"type": "error", "error": {"type": kind, "message": message}}))
    with Twin([error] * 3, protocols=("anthropic",)) as twin:
        claude = adapter(tmp_path, cli_path("claude"), max_retries=0)
        _, result = drive(claude, request(tmp_path, twin))

    assert not result.success
    assert result.error_kind == expected, result.error


@real_cli
def test_turn_limit_is_context_exhausted(tmp_path: Path) -> None:
    write = ToolCall("Write", {"file_path": "a.txt", "content": "a"})
    with Twin([Reply(tool_calls=[write]), Reply(text="more")], protocols=("anthropic",)) as twin:
        claude = adapter(tmp_path, cli_path("claude"), max_turns=1)
        _, result = drive(claude, request(tmp_path, twin))

    assert not result.success
    assert result.error_kind == "context_exhausted", result.error
    assert result.files_changed == ["a.txt"]


def test_odd_lines_among_stream_json_are_tolerated(tmp_path: Path) -> None:
    lines = [
        "[1, 2]",
        "a warning the CLI printed",
        '{"type":"system","subtype":"init","session_id":"s-9"}',
        '{"type":"assistant","message":"oops"}',
        '{"type":"assistant","message":{"id":"m1","content":["x",{"type":"text","text":"hi"}]}}',
        '{"type":"user","message":null}',
        '{"type":"result","subtype":"success","is_error":false,"result":"hi","usage":null}',
    ]
    binary = fake_binary(
        tmp_path, "".join(f"echo '{line}'\n" for line in lines), name="fake-claude"
    )
    events, result = drive(adapter(tmp_path, binary), request(tmp_path))
    assert result.success and result.text == "hi" and result.session_id == "s-9", result.error
    assert AgentText("hi") in events


def test_prompt_goes_to_stdin_and_argv_carries_the_flags(tmp_path: Path) -> None:
    script = 'printf "%s\\n" "$@" > "$0.argv"\ncat > "$0.stdin"\n'
    script += 'echo \'{"type":"system","subtype":"init","session_id":"s-1"}\'\n'
    script += 'echo \'{"type":"result","subtype":"success","is_error":false,"result":"ok",'
    script += '"structured_output":{"a":1},"session_id":"s-1","usage":{"input_tokens":3}}\'\n'
    binary = fake_binary(tmp_path, script, name="fake-claude")
    req = request(
        tmp_path,
        prompt="the task\nwith two lines",
        system_prompt="be terse",
        model="opus",
        allowed_tools=["Read", "Bash(git *)"],
        denied_tools=["WebFetch"],
        resume_session="s-0",
        json_schema={"type": "object"},
    )
    _, result = drive(adapter(tmp_path, binary, system_prompt_mode="replace"), req)

    assert result.success and result.session_id == "s-1" and result.text == "ok"
    assert result.structured == {"a": 1}
    argv = Path(f"{binary}.argv").read_text().splitlines()
    assert Path(f"{binary}.stdin").read_text() == "the task\nwith two lines"
    assert argv[:4] == ["-p", "--output-format", "stream-json", "--verbose"]
    pairs = {
        "--permission-mode": "dontAsk",
        "--setting-sources": "",
        "--model": "opus",
        "--system-prompt": "be terse",
        "--resume": "s-0",
        "--json-schema": '{"type": "object"}',
    }
    for flag, value in pairs.items():
        assert argv[argv.index(flag) + 1] == value
    allowed = argv.index("--allowedTools")
    assert argv[allowed + 1 : allowed + 3] == ["Read", "Bash(git *)"]
    assert argv[argv.index("--disallowedTools") + 1] == "WebFetch"
    assert "--append-system-prompt" not in argv


def test_wave_star_becomes_every_tool_or_no_list_in_bypass_mode(tmp_path: Path) -> None:
    req = request(
        tmp_path, allowed_tools=["*", "Read", "mcp__jira__search"], denied_tools=["Write(*)"]
    )
    argv = adapter(tmp_path, "claude").command("claude", req)
    allowed = argv[argv.index("--allowedTools") + 1 : argv.index("--disallowedTools")]
    assert "*" not in allowed and {"Write", "Edit", "Bash", "Read", "mcp__jira__search"} <= set(
        allowed
    )
    assert argv[argv.index("--disallowedTools") + 1 :] == ["Write"]
    bypass = adapter(tmp_path, "claude", permission_mode="bypassPermissions").command("claude", req)
    assert (
        "--allowedTools" not in bypass and bypass[bypass.index("--disallowedTools") + 1] == "Write"
    )
