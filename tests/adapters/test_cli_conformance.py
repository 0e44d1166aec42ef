"""One conformance suite for the CLI adapters: every behaviour claude, codex, gemini
and opencode share, run once per CLI (tests/cli_setups.py says how each is
set up and what it does differently, by name and with the reason).

Crash, garbage output and a missing binary use a stand-in binary; timeout, rate
limit, resume and permissions run the real CLI against its twin, behind a dead proxy
that fails the test if the CLI tries to reach anything but the twin. What is a CLI's
own (its argv, its event format, its error table) stays in test_<cli>.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from agent_clis import cli_path, drive, fake_binary, procs_under, settled
from cli_setups import CLIS, Cli
from swell.adapters.base import AgentSessionStarted, AgentToolCall, AgentToolResult
from twins.proxy import DeadProxy
from twins.server import Reply, Twin


@pytest.fixture(params=CLIS, ids=[cli.name for cli in CLIS])
def cli(request: pytest.FixtureRequest) -> Cli:
    return request.param  # type: ignore[no-any-return]


# --- a stand-in binary -----------------------------------------------------------------


def test_a_crash_is_reported_with_its_stderr_and_the_session(tmp_path: Path, cli: Cli) -> None:
    script = f"cat > /dev/null\necho '{cli.session_line}'\n"
    script += 'echo "boom: something broke" >&2\nexit 3\n'
    binary = fake_binary(tmp_path, script, name=f"fake-{cli.name}")
    _, result = drive(cli.adapter(tmp_path, binary), cli.request(tmp_path))

    assert result.error_kind == "crash", result.error
    assert "code 3" in (result.error or "") and "boom: something broke" in (result.error or "")
    assert result.session_id == "s-9"  # a resume can still pick the session up


def test_garbage_on_stdout_is_unparseable(tmp_path: Path, cli: Cli) -> None:
    script = f"cat > /dev/null\necho 'Welcome to {cli.name}! <html>'\necho 'not json either'\n"
    binary = fake_binary(tmp_path, script, name=f"fake-{cli.name}")
    _, result = drive(cli.adapter(tmp_path, binary), cli.request(tmp_path))

    assert result.error_kind == "unparseable_output", result.error
    assert f"Welcome to {cli.name}" in (result.error or "")


@pytest.mark.parametrize("where", ["path", "name"])
def test_a_missing_binary_says_how_to_install_it(tmp_path: Path, cli: Cli, where: str) -> None:
    binary = tmp_path / "nowhere" / cli.name if where == "path" else f"no-such-{cli.name}-binary"
    _, result = drive(cli.adapter(tmp_path, binary), cli.request(tmp_path))

    assert result.error_kind == "binary_missing", result.error
    assert f"npm install -g {cli.npm_package}" in (result.error or "")
    assert f"adapters.{cli.name}.binary" in (result.error or "")


# --- the real CLI against its twin -------------------------------------------------------

real_cli = pytest.mark.agent_cli


@real_cli
def test_a_timeout_ends_the_agent_and_every_command_it_started(
    tmp_path: Path, cli: Cli, proxy: DeadProxy
) -> None:
    """The CLI starts a long command without waiting for it, then its model hangs (on a
    busy machine time may be up before that second call): the timeout ends the CLI's
    whole process group and what it left running."""
    marker = f"swell-orphan-{os.getpid()}-{time.monotonic_ns()}"
    job = f'python3 -c \'open("started", "w"); import time; time.sleep(120)\' {marker}'
    replies = [Reply(tool_calls=[cli.background(job)]), Reply(hang=True)]
    with Twin(replies, protocols=(cli.protocol,)) as twin:
        req = cli.request(tmp_path, twin, "start the job", proxy, allowed_tools=["Bash"])
        req = req.model_copy(update={"timeout_s": cli.timeout_s})
        events, result = drive(cli.adapter(tmp_path, cli_path(cli.name), twin), req)

    assert result.error_kind == "timeout", result.error
    assert (req.workspace / "started").exists()  # the command really ran when time was up
    assert result.session_id and AgentSessionStarted(result.session_id) in events
    assert settled(lambda: procs_under(req.workspace)) == []
    leftover = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert leftover.stdout == ""


@real_cli
def test_a_rate_limit_is_reported_after_the_cli_gives_up(
    tmp_path: Path, cli: Cli, proxy: DeadProxy
) -> None:
    with Twin([cli.rate_limited] * 8, protocols=(cli.protocol,)) as twin:
        req = cli.request(tmp_path, twin, proxy=proxy, **cli.request_for_one_retry)
        adapter = cli.adapter(tmp_path, cli_path(cli.name), twin, **cli.options_for_one_retry)
        _, result = drive(adapter, req)

    assert not result.success
    assert result.error_kind == "rate_limit", result.error
    assert all(words in (result.error or "") for words in cli.rate_limit_words), result.error
    assert len(twin.model_calls) == cli.rate_limit_tries
    assert result.session_id  # the session had started: a later visit may resume it


@real_cli
def test_resume_continues_the_same_session_with_its_own_usage(
    tmp_path: Path, cli: Cli, proxy: DeadProxy
) -> None:
    replies = [
        Reply(text="Noted: PELICAN.", usage={"input_tokens": 100, "output_tokens": 5}),
        Reply(text="The word was PELICAN.", usage={"input_tokens": 300, "output_tokens": 7}),
    ]
    with Twin(replies, protocols=(cli.protocol,)) as twin:
        adapter = cli.adapter(tmp_path, cli_path(cli.name), twin)
        _, first = drive(adapter, cli.request(tmp_path, twin, "Remember PELICAN", proxy))
        assert first.success and first.session_id, first.error
        req = cli.request(tmp_path, twin, "Which word?", proxy, resume_session=first.session_id)
        events, second = drive(adapter, req)

    assert second.success, second.error
    assert second.session_id == first.session_id
    assert AgentSessionStarted(first.session_id) in events
    assert second.text == "The word was PELICAN."
    said = cli.said(twin.model_calls[1].body)
    assert "Remember PELICAN" in said and "Noted: PELICAN." in said and "Which word?" in said
    # the visit's own usage, not the session's running total
    assert (second.usage.input_tokens, second.usage.output_tokens) == (300, 7)


KEY = "sk-ant-" + "x7" * 16  # shaped like an Anthropic key: masked wherever it shows


@real_cli
def test_a_tool_calls_result_is_reported_with_its_output_and_duration(
    tmp_path: Path, cli: Cli, proxy: DeadProxy
) -> None:
    shell = cli.shell(f"echo tool-said-PELICAN {KEY}")
    with Twin([Reply(tool_calls=[shell]), Reply(text="finished")], (cli.protocol,)) as twin:
        req = cli.request(tmp_path, twin, proxy=proxy, allowed_tools=["Bash"])
        events, result = drive(cli.adapter(tmp_path, cli_path(cli.name), twin), req)

    assert result.success, result.error
    calls = [e for e in events if isinstance(e, AgentToolCall)]
    results = [e for e in events if isinstance(e, AgentToolResult)]
    assert len(calls) == len(results) == 1, events
    call, done = calls[0], results[0]
    assert call.call_id and done.call_id == call.call_id and done.name == call.name == "Bash"
    assert "tool-said-PELICAN [REDACTED]" in done.output and KEY not in done.output
    assert not done.is_error and done.duration_ms is not None and done.duration_ms >= 0
    assert events.index(call) < events.index(done)


PERMISSIONS = {  # case: (allowed, denied); a shell that is allowed: the star test below
    "denied": ([], ["Bash"]),
    "not-allowed": (["Read", "Grep"], []),
}


@real_cli
@pytest.mark.parametrize("case", list(PERMISSIONS))
def test_permissions_hold_whatever_the_users_own_settings_allow(
    tmp_path: Path, cli: Cli, proxy: DeadProxy, case: str
) -> None:
    allowed, denied = PERMISSIONS[case]
    runs = case == "denied" and not cli.refuses_a_denied_shell  # cli.why_not says why
    shell = cli.shell("echo ran > shell.txt")
    with Twin([Reply(tool_calls=[shell]), Reply(text="finished")], (cli.protocol,)) as twin:
        req = cli.request(tmp_path, twin, proxy=proxy, allowed_tools=allowed, denied_tools=denied)
        cli.widen(Path(req.env["HOME"]))  # the user's own allow-everything settings
        events, result = drive(cli.adapter(tmp_path, cli_path(cli.name), twin), req)

    assert result.success, result.error
    shown = ["Bash"] if runs or cli.shows_a_refused_call else []
    assert [e.name for e in events if isinstance(e, AgentToolCall)] == shown
    assert (req.workspace / "shell.txt").exists() is runs
    assert len(twin.model_calls) == 2  # a refusal went back to the model as a tool result
    cli.refusal_seen(twin, case, runs)


STAR = {  # case: denied, beside a Wave persona's "*" (with the adapter's Read, Bash)
    "deny-rm": ["Bash(rm*)"],
    "deny-write": ["Write(*)"],
}


@real_cli
@pytest.mark.parametrize("case", list(STAR))
def test_a_wave_star_allows_every_tool_and_denials_still_hold(
    tmp_path: Path, cli: Cli, proxy: DeadProxy, case: str
) -> None:
    calls = [cli.write("notes/star.txt", "written\n"), cli.shell("rm keep.txt")]
    calls.append(cli.shell("echo ran > shell.txt"))
    if cli.keeps_env_files:  # asking to read one ends the visit, as its last call
        calls.append(cli.read(".env"))
    replies = [*(Reply(tool_calls=[call]) for call in calls), Reply(text="done")]
    with Twin(replies, (cli.protocol,)) as twin:
        star = ["*", "Read", "Bash"]
        req = cli.request(tmp_path, twin, proxy=proxy, allowed_tools=star, denied_tools=STAR[case])
        (req.workspace / "keep.txt").write_text("keep\n")
        (req.workspace / ".env").write_text("TOKEN=SECRET-VALUE\n")
        _, result = drive(cli.adapter(tmp_path, cli_path(cli.name), twin), req)

    written, removed = cli.star_holds[case]  # (the write ran, the rm ran)
    assert result.success, result.error
    assert (req.workspace / "notes" / "star.txt").exists() is written
    assert result.files_changed == (["notes/star.txt"] if written else [])
    assert (req.workspace / "keep.txt").exists() is not removed
    assert (req.workspace / "shell.txt").read_text() == "ran\n"
    assert len(twin.model_calls) == 4  # each refusal went back to the model
    if cli.keeps_env_files:  # the file's content never reached the model
        assert not any("SECRET-VALUE" in json.dumps(call.body) for call in twin.model_calls)
    cli.star_seen(twin, written)
