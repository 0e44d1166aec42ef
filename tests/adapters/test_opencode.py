"""The opencode adapter against the real opencode CLI talking to a Chat Completions twin.

Each test gets its own HOME (so ~/.config/opencode and ~/.local/share/opencode are never
the user's). The adapter's `base_url` option points the CLI at the twin on 127.0.0.1;
its environment turns off the models.dev refresh, auto-update and sharing, and
`npm_config_offline` stops opencode's background `npm install @opencode-ai/plugin` into
its config directory. Every real-CLI test routes the CLI through a dead HTTP(S) proxy
that fails it if anything still tries to leave 127.0.0.1. Tests that need no real CLI
(fake binaries, argv and config building) are not marked `agent_cli`. What every
CLI adapter does (crash, garbage, missing binary, timeout, rate limit, resume,
permissions) is tested once for all in test_cli_conformance.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path, drive, fake_binary
from cli_setups import OPENCODE_MODEL as MODEL
from cli_setups import opencode_adapter as adapter
from cli_setups import opencode_bash as bash
from cli_setups import opencode_messages as messages
from cli_setups import opencode_request
from cli_setups import opencode_tools as tools
from swell.adapters.base import (
    AgentRequest,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
    Usage,
)
from swell.adapters.opencode import classify, permission_rules
from twins.openai_chat import context_length_exceeded, unauthorized
from twins.proxy import DeadProxy
from twins.server import Reply, ToolCall, Twin

real_cli = pytest.mark.agent_cli


def request(
    tmp_path: Path, prompt: str = "do the task", proxy: DeadProxy | None = None, **fields: Any
) -> AgentRequest:
    return opencode_request(tmp_path, None, prompt, proxy, **fields)


def printing(tmp_path: Path, lines: list[str], then: str = "") -> Path:
    """A fake opencode that prints `lines` as they are (then runs `then`)."""
    out = tmp_path / "fake-opencode.out"
    out.write_text("".join(f"{line}\n" for line in lines))
    return fake_binary(tmp_path, f"cat > /dev/null\ncat '{out}'\n{then}", name="fake-opencode")


@real_cli
def test_a_base_url_visit_without_a_model_says_which_setting_is_missing(
    tmp_path: Path, proxy: DeadProxy
) -> None:
    """Without `-m` opencode picks its own default model, on a provider base_url does
    not serve: it failed with "Unexpected server error" (a Wave fixture step with no
    model under `--adapter opencode`)."""
    with Twin([Reply(text="never asked")], protocols=("openai_chat",)) as twin:
        req = request(tmp_path, "answer", proxy, model=None)
        _, result = drive(adapter(tmp_path, cli_path("opencode"), twin), req)
        asked = len(twin.model_calls)

    assert not result.success
    assert "adapters.opencode.default_model" in (result.error or ""), result.error
    assert asked == 0


@real_cli
def test_write_tool_writes_the_file_and_usage_and_session_are_read(
    tmp_path: Path, proxy: DeadProxy
) -> None:
    write = ToolCall("write", {"filePath": "notes/hello.txt", "content": "hello from the twin\n"})
    replies = [
        Reply(
            tool_calls=[write],
            usage={"input_tokens": 120, "output_tokens": 30, "cache_read_input_tokens": 1000},
        ),
        Reply(
            text="Wrote notes/hello.txt.",
            usage={"input_tokens": 50, "output_tokens": 8, "cache_read_input_tokens": 1100},
        ),
    ]
    with Twin(replies, protocols=("openai_chat",)) as twin:
        req = request(
            tmp_path,
            "Create notes/hello.txt",
            proxy,
            system_prompt="You are the PERSONA-MARKER writer.",
        )
        price = {"input": 3.0, "output": 15.0, "cache_read": 0.3}  # USD per million tokens
        config = {"provider": {"swell": {"models": {MODEL: {"cost": price}}}}}
        events, result = drive(adapter(tmp_path, cli_path("opencode"), twin, config=config), req)

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
    assert sessions == [result.session_id] and sessions[0].startswith("ses_")
    # usage: per model call, cached input apart from input (opencode's own split)
    steps = [e.usage for e in events if isinstance(e, AgentUsageUpdate)]
    assert [(s.input_tokens, s.cache_read_tokens, s.output_tokens) for s in steps] == [
        (120, 1000, 30),
        (50, 1100, 8),
    ]
    assert result.usage.model_dump(exclude={"cost_usd"}) == Usage(
        input_tokens=170, output_tokens=38, cache_read_tokens=2100
    ).model_dump(exclude={"cost_usd"})
    assert result.usage.cost_usd == pytest.approx((170 * 3.0 + 38 * 15.0 + 2100 * 0.3) / 1e6)

    calls = twin.model_calls
    assert len(calls) == 2  # no title-generation call
    first = calls[0].body
    assert first["model"] == MODEL and first["stream"] is True
    assert calls[0].headers["authorization"] == "Bearer sk-twin"
    assert messages(first, "user") == ["Create notes/hello.txt"]
    system = "\n".join(messages(first, "system"))
    assert "PERSONA-MARKER" in system and "You are opencode" in system  # appended to its own
    assert str(req.workspace) in system  # it ran in the workspace
    assert {"write", "edit", "read", "bash"} <= tools(first)
    assert not (req.workspace / "opencode.json").exists()  # the config never lands there


@real_cli
@pytest.mark.parametrize(
    ("allowed", "denied", "offered", "runs"),
    [(["Read", "Bash(git *)"], [], True, False), (["Bash(echo *)"], [], True, True)],
    ids=["pattern-refuses", "pattern-allows"],
)
def test_shell_patterns_are_enforced_by_the_cli(
    tmp_path: Path,
    proxy: DeadProxy,
    allowed: list[str],
    denied: list[str],
    offered: bool,
    runs: bool,
) -> None:
    with Twin([Reply(tool_calls=[bash("echo ran > bash.txt")]), Reply(text="finished")], ("openai_chat",)) as twin:  # fmt: skip
        req = request(tmp_path, proxy=proxy, allowed_tools=allowed, denied_tools=denied)
        events, result = drive(adapter(tmp_path, cli_path("opencode"), twin), req)

    assert result.success, result.error
    assert ("bash" in tools(twin.model_calls[0].body)) is offered
    assert (req.workspace / "bash.txt").exists() is runs
    assert len(twin.model_calls) == 2  # the refusal went back to the model as a tool result
    assert [e.name for e in events if isinstance(e, AgentToolCall)] == ["Bash"]
    if not runs:
        refusal = messages(twin.model_calls[1].body, "tool")[0]
        why = "prevents you from using this specific tool call" if offered else "unavailable tool"
        assert why in refusal, refusal


@real_cli
@pytest.mark.parametrize(
    ("reply", "kind"),
    [(unauthorized(), "auth"), (context_length_exceeded(), "context_exhausted")],
    ids=["401", "context"],
)
def test_api_errors_are_classified(
    tmp_path: Path, proxy: DeadProxy, reply: Reply, kind: str
) -> None:
    with Twin([reply] * 3, protocols=("openai_chat",)) as twin:
        _, result = drive(
            adapter(tmp_path, cli_path("opencode"), twin), request(tmp_path, proxy=proxy)
        )

    assert not result.success
    assert result.error_kind == kind, result.error


@real_cli
def test_unknown_session_is_a_crash(tmp_path: Path) -> None:
    with Twin([], protocols=("openai_chat",)) as twin:
        req = request(tmp_path, resume_session="ses_doesnotexist")
        _, result = drive(adapter(tmp_path, cli_path("opencode"), twin), req)
    assert result.error_kind == "crash" and "Session not found" in (result.error or "")
    assert twin.model_calls == []


@real_cli
def test_background_commands_do_not_outlive_the_visit(tmp_path: Path) -> None:
    marker = f"swell-bg-{os.getpid()}-{time.monotonic_ns()}"
    job = f"nohup python3 -c 'import time; time.sleep(120)' {marker} > /dev/null 2>&1 &"
    with Twin([Reply(tool_calls=[bash(job)]), Reply(text="started")], ("openai_chat",)) as twin:
        req = request(tmp_path, allowed_tools=["Bash"])
        _, result = drive(adapter(tmp_path, cli_path("opencode"), twin), req)

    assert result.success and result.text == "started", result.error
    leftover = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert leftover.stdout == ""  # opencode leaves it running; the adapter stops it


def test_odd_lines_among_json_events_are_tolerated(tmp_path: Path) -> None:
    lines = [
        "[1, 2]",
        "a warning the CLI printed",
        '{"type":"step_start","sessionID":"ses_9","part":{"type":"step-start"}}',
        '{"type":"tool_use","sessionID":"ses_9","part":{"tool":"edit","state":null}}',
        '{"type":"tool_use","sessionID":"ses_9","part":{"tool":"invalid","state":{"status":"completed","input":{"tool":"bash"}}}}',
        '{"type":"text","sessionID":"ses_9","part":{"messageID":"m2","text":"hi"}}',
        '{"type":"step_finish","sessionID":"ses_9","part":{"tokens":{"input":3,"cache":null},"cost":0.5}}',
    ]
    events, result = drive(adapter(tmp_path, printing(tmp_path, lines)), request(tmp_path))
    assert result.success and result.text == "hi" and result.session_id == "ses_9", result.error
    assert AgentToolCall("Edit") in events and AgentToolCall("Bash") in events
    assert result.usage == Usage(input_tokens=3, cost_usd=0.5)
    assert result.files_changed == []


def test_error_event_after_steps_fails_the_visit(tmp_path: Path) -> None:
    lines = [
        '{"type":"step_finish","sessionID":"ses_1","part":{"tokens":{"input":3}}}',
        '{"type":"error","sessionID":"ses_1","error":{"name":"UnknownError","data":{"message":"Rate limit exceeded, try later"}}}',
    ]
    _, result = drive(adapter(tmp_path, printing(tmp_path, lines, "exit 1")), request(tmp_path))
    assert result.error_kind == "rate_limit" and result.usage.input_tokens == 3


def test_structured_answer_is_parsed_from_the_text(tmp_path: Path) -> None:
    answer = json.dumps({"messageID": "m1", "text": '```json\n{"verdict": "pass"}\n```'})
    lines = [
        '{"type":"text","sessionID":"ses_1","part":' + answer + "}",
        '{"type":"step_finish","sessionID":"ses_1","part":{"tokens":{"input":3}}}',
    ]
    req = request(tmp_path, json_schema={"type": "object"})
    _, result = drive(adapter(tmp_path, printing(tmp_path, lines)), req)
    assert result.success and result.structured == {"verdict": "pass"}, result.error


def test_prompt_goes_to_stdin_and_argv_env_config_carry_the_rest(tmp_path: Path) -> None:
    script = 'printf "%s\\n" "$@" > "$0.argv"\ncat > "$0.stdin"\nenv > "$0.env"\n'
    script += 'printf "%s" "$OPENCODE_CONFIG_CONTENT" > "$0.config"\n'
    script += 'echo \'{"type":"step_finish","sessionID":"ses_1","part":{"tokens":{"input":1}}}\'\n'
    binary = fake_binary(tmp_path, script, name="fake-opencode")
    req = request(
        tmp_path,
        "the task\nwith two lines",
        system_prompt="be terse {env:HOME}",
        model="Qwen/Qwen3-8B",
        allowed_tools=["Read", "Bash(git *)"],
        denied_tools=["WebFetch"],
        resume_session="ses_0",
        temperature=0.2,
        run_id="r1",
        step_id="impl",
        visit=2,
    )
    options = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "TWIN_API_KEY"}
    opencode = adapter(tmp_path, binary, config={"agent": {"swell": {"steps": 5}}}, **options)
    _, result = drive(opencode, req)

    assert result.success and result.session_id == "ses_1", result.error
    assert Path(f"{binary}.stdin").read_text() == "the task\nwith two lines"
    argv = Path(f"{binary}.argv").read_text().splitlines()
    assert argv[:5] == ["run", "--format", "json", "--agent", "swell"]
    pairs = {
        "--dir": str(req.workspace),
        "--title": "swell r1/impl #2",
        "-m": "swell/Qwen/Qwen3-8B",
        "-s": "ses_0",
    }
    for flag, value in pairs.items():
        assert argv[argv.index(flag) + 1] == value
    env = dict(
        line.split("=", 1) for line in Path(f"{binary}.env").read_text().splitlines() if "=" in line
    )
    assert env["OPENCODE_DISABLE_AUTOUPDATE"] == env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1" and env["PWD"] == str(req.workspace)
    assert env["OPENCODE_SWELL_VISIT"] and "TWIN_API_KEY" in opencode.env_passthrough

    config = json.loads(Path(f"{binary}.config").read_text())
    agent = config["agent"]["swell"]
    assert agent["permission"] == {
        "*": {"*": "deny"},
        "read": {"*": "allow"},
        "bash": {"git *": "allow"},
        "webfetch": {"*": "deny"},
    }
    assert agent["temperature"] == 0.2 and agent["steps"] == 5 and agent["mode"] == "primary"
    (instructions,) = config["instructions"]
    assert not Path(instructions).exists()  # a temporary file, gone after the visit
    provider = config["provider"]["swell"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {
        "baseURL": "http://127.0.0.1:9/v1",
        "apiKey": "{env:TWIN_API_KEY}",
    }
    assert provider["models"] == {"Qwen/Qwen3-8B": {"name": "Qwen/Qwen3-8B"}}
    assert config["share"] == "disabled" and config["autoupdate"] is False


def test_models_without_a_base_url_name_their_provider(tmp_path: Path) -> None:
    req = request(tmp_path, model="claude-sonnet-4-5")
    assert (
        adapter(tmp_path, "opencode", provider="anthropic").model(req)
        == "anthropic/claude-sonnet-4-5"
    )
    assert adapter(tmp_path, "opencode").model(req) == "claude-sonnet-4-5"
    assert adapter(tmp_path, "opencode").model(req.model_copy(update={"model": None})) is None
    assert "provider" not in adapter(tmp_path, "opencode").config(req, None)


def test_permission_rules_map_swell_tool_names() -> None:
    assert permission_rules([], []) == {}
    assert permission_rules(
        ["Write", "Edit", "LS", "Bash(npm:*)", "mcp__github"], ["Bash(rm *)"]
    ) == {
        "*": {"*": "deny"},
        "edit": {"*": "allow"},
        "list": {"*": "allow"},
        "bash": {"npm *": "allow", "rm *": "deny"},
        "github_*": {"*": "allow"},
    }
    assert permission_rules([], ["mcp__github__create_issue", "task"]) == {
        "github_create_issue": {"*": "deny"},
        "task": {"*": "deny"},
    }


def test_errors_are_classified_by_status_name_and_words() -> None:
    def kind(name: str, **data: Any) -> str:
        return classify({"name": name, "data": data}).kind

    assert kind("APIError", message="x", statusCode=429) == "rate_limit"
    assert kind("APIError", message="bad key", statusCode=401) == "auth"
    assert kind("ProviderAuthError", message="no key") == "auth"
    assert kind("ContextOverflowError", message="too long") == "context_exhausted"
    assert (
        kind("APIError", message="maximum context length is 8192", statusCode=400)
        == "context_exhausted"
    )
    assert kind("APIError", message="internal", statusCode=500) == "crash"
    assert classify({"message": "weird"}).kind == "crash"
