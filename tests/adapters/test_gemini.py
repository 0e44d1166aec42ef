"""The gemini adapter against the real Gemini CLI talking to a Gemini API twin.

Each test gets its own HOME (so ~/.gemini is never the user's) whose settings.json
turns off what would reach the internet (usage statistics, telemetry, auto-update, IDE
integration) and selects API-key auth, which GOOGLE_GEMINI_BASE_URL needs in headless
mode (0.61 would otherwise pick the "gateway" auth type and refuse to start). The main
test routes the CLI through a dead HTTP(S) proxy that fails it if anything tries to
leave 127.0.0.1. Tests that need no real CLI (fake binaries, argv building) are not
marked `agent_cli`. What every CLI adapter does (crash, garbage, missing binary,
timeout, rate limit, resume, permissions) is tested once for all in
test_cli_conformance.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from agent_clis import cli_path, drive, fake_binary
from cli_setups import GEMINI_MODEL as MODEL
from cli_setups import gemini_adapter as adapter
from cli_setups import gemini_declared as declared
from cli_setups import gemini_request as request
from cli_setups import gemini_texts as texts
from cli_setups import gemini_tool_outputs as tool_outputs
from cli_setups import gemini_widen
from swell.adapters.base import (
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
)
from swell.adapters.gemini import GeminiAdapter, policy
from twins.gemini import api_error
from twins.proxy import DeadProxy
from twins.server import Reply, ToolCall, Twin

real_cli = pytest.mark.agent_cli


@real_cli
def test_a_commit_in_the_shell_uses_the_users_git_identity(
    tmp_path: Path, proxy: DeadProxy
) -> None:
    """The CLI's shell runs git with GIT_CONFIG_GLOBAL=/dev/null, so the identity in
    ~/.gitconfig is hidden: a Wave step's commit failed with "Author identity unknown"."""
    commit = "git add -A && git commit -q -m 'the work' && git log -1 --format=%an"
    replies = [
        Reply(tool_calls=[ToolCall("run_shell_command", {"command": commit})]),
        Reply(text="committed"),
    ]
    with Twin(replies, protocols=("gemini",)) as twin:
        req = request(tmp_path, twin, "commit", proxy, allowed_tools=["*"])
        home = Path(req.env["HOME"])
        (home / ".gitconfig").write_text("[user]\n\tname = Ada Gemini\n\temail = ada@example.com\n")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=req.workspace, check=True)
        (req.workspace / "work.txt").write_text("done\n")
        _, result = drive(adapter(tmp_path, cli_path("gemini")), req)
        shown = tool_outputs(twin.model_calls[-1].body)

    assert result.success, result.error
    log = subprocess.run(
        ["git", "log", "-1", "--format=%an <%ae> %s"],
        cwd=req.workspace, capture_output=True, text=True,
    )  # fmt: skip
    assert log.stdout.strip() == "Ada Gemini <ada@example.com> the work", shown


@real_cli
def test_write_tool_writes_the_file_and_usage_and_session_are_read(
    tmp_path: Path, proxy: DeadProxy
) -> None:
    write = ToolCall("write_file", {"file_path": "notes/hello.txt", "content": "hello twin\n"})
    replies = [
        Reply(
            text="I will write it.",
            tool_calls=[write],
            usage={"input_tokens": 120, "output_tokens": 30, "cache_read_input_tokens": 1000},
        ),
        Reply(
            text="Wrote notes/hello.txt.",
            usage={"input_tokens": 50, "output_tokens": 8, "cache_read_input_tokens": 1400},
        ),
    ]
    with Twin(replies, protocols=("gemini",)) as twin:
        req = request(
            tmp_path,
            twin,
            "Create notes/hello.txt",
            proxy,
            system_prompt="You are the PERSONA-MARKER writer.",
        )
        events, result = drive(adapter(tmp_path, cli_path("gemini")), req)

    assert result.success, result.error
    assert (req.workspace / "notes" / "hello.txt").read_text() == "hello twin\n"
    assert result.files_changed == ["notes/hello.txt"]
    # the call id is the CLI's own
    assert ("Write", "notes/hello.txt") in [
        (e.name, e.target) for e in events if isinstance(e, AgentToolCall)
    ]
    assert AgentText("I will write it.") in events and AgentText("Wrote notes/hello.txt.") in events
    assert result.text == "Wrote notes/hello.txt."

    sessions = [e.session_id for e in events if isinstance(e, AgentSessionStarted)]
    assert sessions and sessions[0] == result.session_id
    chats = list((tmp_path / "home" / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    assert chats and result.session_id[:8] in chats[0].name  # sessions live in our HOME

    u = result.usage  # summed over both model calls, cached input counted apart
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (170, 38, 2400)
    assert [e.usage for e in events if isinstance(e, AgentUsageUpdate)] == [u]

    calls = twin.model_calls
    assert len(calls) == 2 and all(c.path.startswith(f"/v1beta/models/{MODEL}:") for c in calls)
    first = calls[0].body
    assert "Create notes/hello.txt" in texts(first)
    system = json.dumps(first["systemInstruction"])
    assert "PERSONA-MARKER" in system and "non-interactive CLI agent" not in system  # replaced
    assert {"read_file", "write_file", "replace", "run_shell_command"} <= declared(first)
    assert "google_web_search" not in declared(first)  # not among the default tools
    assert calls[0].headers["x-goog-api-key"] == "dummy-key"
    assert tool_outputs(calls[1].body)[0].get("output", "").startswith("Successfully created")
    assert sorted(p.name for p in req.workspace.iterdir()) == ["notes"]  # nothing else left


@real_cli
@pytest.mark.parametrize(
    "allowed",
    [["Bash(git *)"], ["Bash(echo *)"]],  # a pattern does not allow redirection
    ids=["other-prefix", "prefix-no-redirect"],
)
def test_a_shell_pattern_refuses_other_commands(tmp_path: Path, allowed: list[str]) -> None:
    shell = ToolCall("run_shell_command", {"command": "echo ran > shell.txt"})
    with Twin([Reply(tool_calls=[shell]), Reply(text="finished")], ("gemini",)) as twin:
        req = request(tmp_path, twin, allowed_tools=allowed)
        gemini_widen(Path(req.env["HOME"]))  # the user's own allow-everything settings
        _, result = drive(adapter(tmp_path, cli_path("gemini")), req)

    assert result.success, result.error
    assert not (req.workspace / "shell.txt").exists()
    assert "error" in tool_outputs(twin.model_calls[1].body)[0]


@real_cli
def test_a_shell_pattern_with_a_wildcard_inside_is_enforced(tmp_path: Path) -> None:
    calls = [
        ToolCall("run_shell_command", {"command": "echo one --force"}),
        ToolCall("run_shell_command", {"command": "mkdir made"}),
    ]
    with Twin([Reply(tool_calls=calls), Reply(text="done")], ("gemini",)) as twin:
        req = request(tmp_path, twin, allowed_tools=["*"], denied_tools=["Bash(echo * --force)"])
        _, result = drive(adapter(tmp_path, cli_path("gemini")), req)

    assert result.success, result.error
    outputs = tool_outputs(twin.model_calls[1].body)
    assert "error" in outputs[0] and "error" not in outputs[1], outputs
    assert (req.workspace / "made").is_dir()


@real_cli
def test_shell_prefix_rule_allows_matching_commands(tmp_path: Path) -> None:
    calls = [
        ToolCall("run_shell_command", {"command": "mkdir made-by-mkdir"}),
        ToolCall("run_shell_command", {"command": "touch touched.txt"}),
    ]
    with Twin([Reply(tool_calls=calls), Reply(text="done")], ("gemini",)) as twin:
        req = request(tmp_path, twin, allowed_tools=["Bash(mkdir *)"], denied_tools=["Bash(rm *)"])
        _, result = drive(adapter(tmp_path, cli_path("gemini")), req)

    assert result.success, result.error
    assert sorted(p.name for p in req.workspace.iterdir()) == ["made-by-mkdir"]


@real_cli
def test_persona_can_go_before_the_prompt_instead(tmp_path: Path) -> None:
    with Twin([Reply(text="ok")], protocols=("gemini",)) as twin:
        req = request(tmp_path, twin, "the task", system_prompt="PERSONA-FIRST")
        _, result = drive(adapter(tmp_path, cli_path("gemini"), system_prompt_mode="prepend"), req)

    assert result.success, result.error
    body = twin.model_calls[0].body
    assert "PERSONA-FIRST\n\nthe task" in texts(body)
    assert "non-interactive CLI agent" in json.dumps(body["systemInstruction"])  # kept


@real_cli
@pytest.mark.parametrize(
    ("status", "code", "message", "expected"),
    [
        (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "auth"),
        (401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", "auth"),
        (403, "PERMISSION_DENIED", "Permission denied on resource project.", "auth"),
        (
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            "context_exhausted",
        ),
        (500, "INTERNAL", "An internal error has occurred.", "crash"),
    ],
)
def test_api_errors_are_classified(
    tmp_path: Path, status: int, code: str, message: str, expected: str
) -> None:
    with Twin([Reply(error=api_error(status, code, message))] * 3, ("gemini",)) as twin:
        _, result = drive(adapter(tmp_path, cli_path("gemini")), request(tmp_path, twin))

    assert not result.success
    assert result.error_kind == expected, result.error
    assert message in (result.error or "")


@real_cli
def test_missing_credentials_are_auth_failures(tmp_path: Path) -> None:
    req = request(tmp_path)  # no GEMINI_API_KEY, no login
    _, result = drive(adapter(tmp_path, cli_path("gemini")), req)
    assert result.error_kind == "auth", result.error
    assert "GEMINI_API_KEY" in (result.error or "")


@real_cli
def test_garbage_from_the_model_fails_the_visit(tmp_path: Path) -> None:
    with Twin([Reply(garbage=b"data: {broken\n\n")] * 2, protocols=("gemini",)) as twin:
        _, result = drive(adapter(tmp_path, cli_path("gemini")), request(tmp_path, twin))
    assert not result.success and result.error_kind == "crash", result.error


@real_cli
def test_background_commands_do_not_outlive_the_visit(tmp_path: Path) -> None:
    marker = f"swell-bg-{os.getpid()}-{time.monotonic_ns()}"
    job = f"python3 -c 'import time; time.sleep(120)' {marker}"
    shell = ToolCall("run_shell_command", {"command": job, "is_background": True})
    with Twin([Reply(tool_calls=[shell]), Reply(text="started")], ("gemini",)) as twin:
        req = request(tmp_path, twin, allowed_tools=["Bash"])
        _, result = drive(adapter(tmp_path, cli_path("gemini")), req)

    assert result.success and result.text == "started", result.error
    assert "moved to background" in str(tool_outputs(twin.model_calls[1].body))
    leftover = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert leftover.stdout == ""  # the CLI leaves it running; the adapter stops it


def test_odd_lines_among_stream_json_are_tolerated(tmp_path: Path) -> None:
    lines = [
        "[1, 2]",
        "a warning the CLI printed",
        '{"type":"init","session_id":"s-9","model":"m"}',
        '{"type":"message","role":"user","content":"x"}',
        '{"type":"message","role":"assistant","content":"h","delta":true}',
        '{"type":"message","role":"assistant","content":"i","delta":true}',
        '{"type":"tool_use","tool_name":"replace","tool_id":"t1","parameters":null}',
        '{"type":"tool_result","tool_id":"t1","status":"success"}',
        '{"type":"error","severity":"warning","message":"Loop detected"}',
        '{"type":"result","status":"success","stats":null}',
    ]
    binary = fake_binary(
        tmp_path, "".join(f"echo '{line}'\n" for line in lines), name="fake-gemini"
    )
    events, result = drive(adapter(tmp_path, binary), request(tmp_path))
    assert result.success and result.text == "hi" and result.session_id == "s-9", result.error
    assert AgentText("hi") in events and AgentToolCall("Edit", None, "t1") in events
    assert result.files_changed == []


@real_cli
def test_turn_limit_is_context_exhausted(tmp_path: Path) -> None:
    write = ToolCall("write_file", {"file_path": "a.txt", "content": "a"})
    with Twin([Reply(tool_calls=[write]), Reply(text="more")], ("gemini",)) as twin:
        req = request(tmp_path, twin, settings={"model": {"maxSessionTurns": 1}})
        events, result = drive(adapter(tmp_path, cli_path("gemini")), req)

    assert result.error_kind == "context_exhausted", result.error
    assert "max session turns" in (result.error or "")
    assert result.files_changed == ["a.txt"]
    assert result.usage.input_tokens == 100 and AgentUsageUpdate(result.usage) in events


def test_prompt_goes_to_stdin_and_argv_env_policy_carry_the_rest(tmp_path: Path) -> None:
    script = 'printf "%s\\n" "$@" > "$0.argv"\ncat > "$0.stdin"\n'
    script += 'cat "$GEMINI_SYSTEM_MD" > "$0.system"\nenv > "$0.env"\n'
    script += 'while [ "$1" != "--policy" ]; do shift; done; cp "$2" "$0.policy"; echo "$2" > "$0.where"\n'
    script += 'echo \'{"type":"init","session_id":"s-1","model":"m"}\'\n'
    script += 'echo \'{"type":"result","status":"success","stats":{"input_tokens":3}}\'\n'
    binary = fake_binary(tmp_path, script, name="fake-gemini")
    req = request(
        tmp_path,
        prompt="the task\nwith two lines",
        system_prompt="be terse",
        model="gemini-2.5-flash",
        allowed_tools=["Read", "Bash(git *)"],
        denied_tools=["WebFetch"],
        resume_session="s-0",
    )
    _, result = drive(adapter(tmp_path, binary, extra_args=["--debug"]), req)

    assert result.success and result.session_id == "s-1", result.error
    assert result.usage.input_tokens == 3
    argv = Path(f"{binary}.argv").read_text().splitlines()
    assert argv[:4] == ["-p", "", "-o", "stream-json"]
    pairs = {"-m": "gemini-2.5-flash", "--approval-mode": "default", "--resume": "s-0"}
    for flag, value in pairs.items():
        assert argv[argv.index(flag) + 1] == value
    assert "--skip-trust" in argv and argv[-1] == "--debug"
    assert Path(f"{binary}.stdin").read_text() == "the task\nwith two lines"
    assert Path(f"{binary}.system").read_text() == "be terse"
    env = Path(f"{binary}.env").read_text().splitlines()
    assert "GEMINI_CLI_NO_RELAUNCH=true" in env
    assert Path(f"{binary}.policy").read_text() == policy(["Read", "Bash(git *)"], ["WebFetch"])
    assert not Path(Path(f"{binary}.where").read_text().strip()).exists()  # removed after


def test_default_model_when_none_is_named(tmp_path: Path) -> None:
    req = request(tmp_path, model=None)
    argv = adapter(tmp_path, "gemini").command("gemini", req, tmp_path / "p.toml")
    assert argv[argv.index("-m") + 1] == "gemini-2.5-pro"


def test_policy_maps_swell_tools_onto_the_cli_policy_engine() -> None:
    allowed = ["Read", "Edit", "Bash(npm run test:*)", "Write(src/**)", "mcp__jira__search"]
    text = policy(allowed, ["Bash(rm *)"])
    rules = text.split("[[rule]]\n")[1:]
    assert rules[0] == (
        'toolName = "*"\ndenyMessage = "not allowed for this persona"\n'
        'decision = "deny"\npriority = 950\n\n'
    )
    assert 'toolName = "run_shell_command"\ncommandPrefix = "npm run test"\n' in text
    assert 'toolName = ["read_file", "read_many_files", "replace", "mcp_jira_search"]\n' in text
    assert '"run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\npriority = 999' in text
    assert "write_file" not in text  # an argument pattern the CLI cannot enforce: not allowed
    assert "allowRedirection" not in text
    whole_shell = policy(["Bash(*)"], [])
    assert 'toolName = "run_shell_command"\nallowRedirection = true\n' in whole_shell
    assert 'toolName = ["list_background_processes", "read_background_output"]' in whole_shell
    assert 'toolName = "write_file"\ndecision = "deny"' in policy([], ["Write(secrets/*)"])


def test_wave_star_and_patterns_the_policy_cannot_hold_to() -> None:
    star = policy(["*", "Read"], ["Bash(git * --force)"])
    assert 'toolName = "run_shell_command"\nallowRedirection = true\ndecision = "allow"' in star
    assert 'toolName = ["*", "read_file", "read_many_files"]\ndecision = "allow"' in star
    assert 'commandRegex = "git .* \\\\-\\\\-force\\""\ndecision = "deny"' in star
    gaps = GeminiAdapter.unenforced(["Read", "Write(docs/**)"], ["Read(.env*)", "Bash(rm*)"], {})
    assert [g.message("gemini") for g in gaps] == [
        "adapter 'gemini' cannot enforce allowed_tools entry 'Write(docs/**)': gemini limits "
        "only shell commands by pattern, not Write; it stays denied",
        "adapter 'gemini' cannot enforce deny entry 'Read(.env*)': gemini limits only shell "
        "commands by pattern, not Read; all of it is denied",
    ]
    assert GeminiAdapter.unenforced(["*", "Write(docs/**)"], [], {}) == []  # "*" allows Write
