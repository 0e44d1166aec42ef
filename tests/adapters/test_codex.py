"""The codex adapter against the real Codex CLI talking to an OpenAI Responses twin.

Each test gets its own HOME and CODEX_HOME (never the user's), whose config.toml turns
off the features that reach the internet (analytics, the plugin marketplace sync); the
adapter's `base_url` option points the CLI at the twin on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path, drive, fake_binary
from swell.adapters.base import (
    AdapterSetup,
    AgentRequest,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
)
from swell.adapters.codex import CodexAdapter, sandbox_mode, toml_value
from twins.server import Reply, ToolCall, Twin

MODEL = "gpt-5.1-codex"  # a model whose tools are plain functions (exec_command)
OFFLINE_CONFIG = """\
[analytics]
enabled = false

[features]
plugins = false
"""

real_cli = pytest.mark.agent_cli


def adapter(tmp_path: Path, binary: str | Path | None, twin: Twin | None = None) -> CodexAdapter:
    options: dict[str, Any] = {}
    if twin is not None:
        options = {
            "base_url": f"{twin.url}/v1",
            "api_key_env": "TWIN_API_KEY",
            # Codex retries 429/5xx itself (a 429 six times); stream_max_retries governs that
            "config": {
                "model_providers.swell.request_max_retries": 0,
                "model_providers.swell.stream_max_retries": 0,
            },
        }
    setup = AdapterSetup("codex", str(binary) if binary else None, options, tmp_path)
    return CodexAdapter(setup)


def request(tmp_path: Path, prompt: str = "do the task", **fields: Any) -> AgentRequest:
    home, codex_home, workspace = tmp_path / "home", tmp_path / "codex-home", tmp_path / "ws"
    for path in (home, codex_home, workspace, tmp_path / "tmp"):
        path.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(OFFLINE_CONFIG)
    # TMPDIR: Codex puts its sandbox helper (codex-linux-sandbox) on the PATH only when
    # CODEX_HOME is not inside the temp dir; without it a machine's bwrap cannot start it
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "TMPDIR": str(tmp_path / "tmp"),
        "TWIN_API_KEY": "sk-twin",
    }
    fields = {"model": MODEL, "timeout_s": 60, "env": env, **fields}
    return AgentRequest(prompt=prompt, workspace=workspace, **fields)


def inputs(body: Any) -> list[dict[str, Any]]:
    return [item for item in body.get("input", []) if isinstance(item, dict)]


def texts(body: Any) -> list[str]:
    return [
        part.get("text", "")
        for item in inputs(body)
        if item.get("type") == "message"
        for part in item.get("content", [])
    ]


def shell(cmd: str, **extra: Any) -> ToolCall:
    return ToolCall("exec_command", {"cmd": cmd, **extra})


PATCH = "*** Begin Patch\n*** Add File: notes/hello.txt\n+hello from codex\n*** End Patch\n"


@real_cli
def test_tool_calls_write_files_and_usage_and_session_are_reported(tmp_path: Path) -> None:
    replies = [
        Reply(tool_calls=[shell(f"apply_patch <<'EOF'\n{PATCH}EOF\n")], usage={"input_tokens": 100, "output_tokens": 10}),
        Reply(tool_calls=[shell("printf 'via shell' > shell.txt")], usage={"input_tokens": 150, "output_tokens": 12, "cache_read_input_tokens": 80}),
        Reply(text="All done.", usage={"input_tokens": 40, "output_tokens": 8, "cache_read_input_tokens": 200}),
    ]  # fmt: skip
    with Twin(replies, protocols=("openai_responses",)) as twin:
        req = request(tmp_path, "write the notes", system_prompt="You are PERSONA-7.")
        events, result = drive(adapter(tmp_path, cli_path("codex"), twin), req)

    assert result.success, result.error
    assert (req.workspace / "notes" / "hello.txt").read_text() == "hello from codex\n"
    assert (req.workspace / "shell.txt").read_text() == "via shell"
    calls = [e for e in events if isinstance(e, AgentToolCall)]
    assert AgentToolCall("Write", "notes/hello.txt") in calls
    assert any(c.name == "Bash" and "shell.txt" in (c.target or "") for c in calls)
    assert result.files_changed == ["notes/hello.txt"]
    assert result.text == "All done." and AgentText("All done.") in events
    # usage: the sum over the turn's three model calls, cached input counted apart
    assert result.usage.input_tokens == 100 + 150 + 40
    assert result.usage.cache_read_tokens == 80 + 200
    assert result.usage.output_tokens == 10 + 12 + 8
    assert [e.usage for e in events if isinstance(e, AgentUsageUpdate)] == [result.usage]
    started = [e for e in events if isinstance(e, AgentSessionStarted)]
    assert started and started[0].session_id == result.session_id
    assert twin.model_calls[0].headers["authorization"] == "Bearer sk-twin"
    first = texts(twin.model_calls[0].body)
    assert "You are PERSONA-7." in first and "write the notes" in first
    assert all(r.path.startswith("/v1/") for r in twin.requests)


@real_cli
def test_second_visit_resumes_the_thread_and_reports_only_its_own_usage(tmp_path: Path) -> None:
    replies = [
        Reply(text="first answer", usage={"input_tokens": 100, "output_tokens": 20}),
        Reply(text="second answer", usage={"input_tokens": 300, "output_tokens": 30, "cache_read_input_tokens": 50}),
    ]  # fmt: skip
    with Twin(replies, protocols=("openai_responses",)) as twin:
        codex = adapter(tmp_path, cli_path("codex"), twin)
        _, first = drive(codex, request(tmp_path, "first question"))
        assert first.success, first.error
        _, second = drive(
            codex, request(tmp_path, "second question", resume_session=first.session_id)
        )

    assert second.success, second.error
    assert second.session_id == first.session_id
    seen = texts(twin.model_calls[1].body)
    assert "first question" in seen and "first answer" in seen and "second question" in seen
    assert (first.usage.input_tokens, first.usage.output_tokens) == (100, 20)
    assert second.usage.input_tokens == 300
    assert second.usage.cache_read_tokens == 50
    assert second.usage.output_tokens == 30


@real_cli
def test_read_only_permissions_really_prevent_writes(tmp_path: Path) -> None:
    replies = [
        Reply(tool_calls=[shell("printf x > blocked.txt")]),
        Reply(tool_calls=[shell(f"apply_patch <<'EOF'\n{PATCH}EOF\n")]),
        Reply(text="tried"),
    ]
    with Twin(replies, protocols=("openai_responses",)) as twin:
        req = request(tmp_path, allowed_tools=["Read", "Grep"])
        _, result = drive(adapter(tmp_path, cli_path("codex"), twin), req)

    assert result.success, result.error
    assert list(req.workspace.iterdir()) == []
    outputs = [
        str(item.get("output"))
        for item in inputs(twin.model_calls[-1].body)
        if item.get("type") == "function_call_output"
    ]
    assert "Read-only file system" in outputs[0]
    assert "read-only sandbox" in outputs[1]


@real_cli
@pytest.mark.parametrize(
    ("denied", "written"),
    [(["Bash(rm*)"], True), (["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"], False)],
    ids=["deny-rm", "deny-writers"],
)
def test_wave_star_allows_every_tool_and_a_denial_of_every_writer_holds(
    tmp_path: Path, denied: list[str], written: bool
) -> None:
    # a Wave persona's "*" (without adapter defaults): the workspace-write sandbox,
    # unless every tool that writes is denied
    replies = [
        Reply(tool_calls=[shell(f"apply_patch <<'EOF'\n{PATCH}EOF\n")]),
        Reply(tool_calls=[shell("rm keep.txt")]),
        Reply(text="done"),
    ]
    with Twin(replies, protocols=("openai_responses",)) as twin:
        req = request(tmp_path, allowed_tools=["*"], denied_tools=denied)
        (req.workspace / "keep.txt").write_text("keep\n")
        _, result = drive(adapter(tmp_path, cli_path("codex"), twin), req)

    assert result.success, result.error
    assert (req.workspace / "notes" / "hello.txt").exists() is written
    assert result.files_changed == (["notes/hello.txt"] if written else [])
    # codex cannot refuse one command: `rm` runs where the sandbox lets it write,
    # and swell says so (unenforced)
    assert (req.workspace / "keep.txt").exists() is not written
    assert len(twin.model_calls) == 3


@real_cli
@pytest.mark.parametrize("worktree", [False, True], ids=["checkout", "worktree"])
def test_a_writing_persona_writes_wave_outputs_and_commits(tmp_path: Path, worktree: bool) -> None:
    """Codex's workspace-write sandbox keeps `.agents` and `.git` read-only inside the
    workspace: without their own writable roots a Wave step could neither write its
    `.agents/output/...` artifact nor commit (both refused: "writing outside of the
    project", "Read-only file system")."""
    repo = tmp_path / "repo"
    git = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
    git |= {"GIT_COMMITTER_EMAIL": "t@e"}
    repo.mkdir()
    subprocess.run(
        "git init -q -b main && git commit -q --allow-empty -m initial",
        shell=True, cwd=repo, env={**os.environ, **git}, check=True,
    )  # fmt: skip
    patch = PATCH.replace("notes/hello.txt", ".agents/output/result.json")
    replies = [
        Reply(tool_calls=[shell(f"apply_patch <<'EOF'\n{patch}EOF\n")]),
        Reply(tool_calls=[shell("git add -A && git commit -q -m 'the work'")]),
        Reply(text="done"),
    ]
    with Twin(replies, protocols=("openai_responses",)) as twin:
        req = request(tmp_path, allowed_tools=["*"])
        if worktree:  # swell's workspaces may be worktrees: their git dir is elsewhere
            req.workspace.rmdir()
            subprocess.run(
                ["git", "worktree", "add", "-q", str(req.workspace)], cwd=repo, check=True
            )
        else:
            req.workspace.rmdir()
            req = req.model_copy(update={"workspace": repo})
        req.env.update(git)
        _, result = drive(adapter(tmp_path, cli_path("codex"), twin), req)
        outputs = [i.get("output", "") for i in inputs(twin.model_calls[-1].body)]

    assert result.success, result.error
    assert (req.workspace / ".agents" / "output" / "result.json").exists(), outputs
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=req.workspace, capture_output=True, text=True
    )
    assert log.stdout.splitlines()[0] == "the work", outputs


def test_what_codex_cannot_enforce_is_named() -> None:
    star = ["*", "Read", "Bash"]
    assert sandbox_mode(star) == "workspace-write"
    assert sandbox_mode(star, ["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]) == "read-only"
    assert sandbox_mode(["Read", "Write"], ["Write"]) == "read-only"
    messages = [
        g.message("codex")
        for g in CodexAdapter.unenforced(star, ["Bash(git push*)", "WebFetch"], {})
    ]
    assert messages == [
        "adapter 'codex' cannot enforce deny entry 'Bash(git push*)': codex's shell cannot be "
        "taken away or limited per command; its workspace-write sandbox is all that holds",
        "adapter 'codex' cannot enforce deny entry 'WebFetch': codex has no per-tool switches; "
        "its workspace-write sandbox is all that holds",
    ]
    gaps = CodexAdapter.unenforced(["Read", "Write(docs/**)"], [], {})
    assert [(g.entry, g.denied) for g in gaps] == [("Write(docs/**)", False)] * 2
    # nothing writes in a read-only sandbox: denying a writer there is enforced
    assert CodexAdapter.unenforced(["Read", "Grep"], ["Write"], {}) == []
    assert [
        g.entry
        for g in CodexAdapter.unenforced(["Read"], ["Write"], {"sandbox": "workspace-write"})
    ] == ["Write"]


@real_cli
def test_structured_answer_follows_the_schema(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
        "required": ["verdict", "score"],
        "additionalProperties": False,
    }
    with Twin([Reply(text='{"verdict": "pass", "score": 7}')], ("openai_responses",)) as twin:
        _, result = drive(
            adapter(tmp_path, cli_path("codex"), twin), request(tmp_path, json_schema=schema)
        )

    assert result.success, result.error
    assert result.structured == {"verdict": "pass", "score": 7}
    fmt = twin.model_calls[0].body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"] == schema


@real_cli
@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (429, {"error": {"type": "rate_limit_exceeded", "message": "Rate limit reached"}}, "rate_limit"),
        (401, {"error": {"code": "invalid_api_key", "message": "Incorrect API key provided"}}, "auth"),
        (400, {"error": {"code": "context_length_exceeded", "message": "Input too long"}}, "context_exhausted"),
    ],
)  # fmt: skip
def test_model_errors_are_classified(
    tmp_path: Path, status: int, body: dict[str, Any], kind: str
) -> None:
    error = Reply(error=(status, body), headers={"retry-after": "0"})
    with Twin([error] * 6, protocols=("openai_responses",)) as twin:
        _, result = drive(adapter(tmp_path, cli_path("codex"), twin), request(tmp_path))
    assert not result.success
    assert result.error_kind == kind, result.error
    assert result.session_id  # the thread had started


def _running(pattern: str) -> bool:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return found.returncode == 0


@real_cli
def test_hang_past_the_timeout_ends_codex_and_its_commands(tmp_path: Path) -> None:
    sleeper = f"sleep {3600 + random.randint(1, 10**6) / 1000:.3f}"
    replies = [Reply(tool_calls=[shell(sleeper, yield_time_ms=250)]), Reply(hang=True)]
    with Twin(replies, protocols=("openai_responses",)) as twin:
        req = request(tmp_path, timeout_s=6)
        started = time.monotonic()
        _, result = drive(adapter(tmp_path, cli_path("codex"), twin), req)
        assert len(twin.model_calls) == 2  # the sleep was started, then the model hung

    assert result.error_kind == "timeout", result.error
    assert time.monotonic() - started < 20
    deadline = time.monotonic() + 5
    while (_running(str(req.workspace)) or _running(sleeper)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(str(req.workspace)), "codex outlived the timeout"
    assert not _running(sleeper), "a command codex started outlived the timeout"


def fake_codex(tmp_path: Path, body: str) -> Path:
    return fake_binary(tmp_path, f"cat >/dev/null\n{body}\n", name="fake-codex")


def test_crash_is_reported_with_stderr(tmp_path: Path) -> None:
    binary = fake_codex(
        tmp_path,
        'echo \'{"type":"thread.started","thread_id":"t-1"}\'\n'
        "echo 'panicked at core/src/codex.rs' >&2\nexit 101",
    )
    _, result = drive(adapter(tmp_path, binary), request(tmp_path))
    assert result.error_kind == "crash"
    assert "101" in (result.error or "") and "panicked" in (result.error or "")
    assert result.session_id == "t-1"


def test_garbage_output_is_unparseable(tmp_path: Path) -> None:
    binary = fake_codex(tmp_path, "echo '<html>Bad gateway</html>'\necho 'not json either'")
    _, result = drive(adapter(tmp_path, binary), request(tmp_path))
    assert result.error_kind == "unparseable_output"
    assert "<html>" in (result.error or "")


def test_missing_binary_says_how_to_install(tmp_path: Path) -> None:
    _, result = drive(adapter(tmp_path, tmp_path / "nowhere" / "codex"), request(tmp_path))
    assert result.error_kind == "binary_missing"
    assert "npm install -g @openai/codex" in (result.error or "")
    assert "adapters.codex.binary" in (result.error or "")


def test_command_line_maps_permissions_resume_and_persona(tmp_path: Path) -> None:
    codex = adapter(tmp_path, "codex")
    req = request(tmp_path, system_prompt='Say "hi"\n', allowed_tools=["Read"])
    argv = codex.command("codex", req.model_copy(update={"resume_session": "abc-123"}), None)
    assert argv[:2] == ["codex", "exec"] and "--json" in argv
    assert argv[argv.index("-s") + 1] == "read-only"
    assert argv[argv.index("-C") + 1] == str(req.workspace)
    assert 'developer_instructions="Say \\"hi\\"\\n"' in argv
    assert argv[-3:] == ["resume", "abc-123", "-"]
    assert sandbox_mode(["Read", "Bash(git status)"]) == "workspace-write"
    assert sandbox_mode(["Read", "Glob"]) == "read-only"
    assert sandbox_mode([]) == "workspace-write"
    assert toml_value(["a", True, 3]) == '["a", true, 3]'  # type: ignore[list-item]
    assert json.loads(toml_value("tab\tand \u00e9")) == "tab\tand \u00e9"
