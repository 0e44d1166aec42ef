"""The codex adapter against the real Codex CLI talking to an OpenAI Responses twin.

Each test gets its own HOME and CODEX_HOME (never the user's), whose config.toml turns
off the features that reach the internet (analytics, the plugin marketplace sync); the
adapter's `base_url` option points the CLI at the twin on 127.0.0.1. What every CLI
adapter does (crash, garbage, missing binary, timeout, rate limit, resume,
permissions) is tested once for all in test_cli_conformance.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path, drive
from cli_setups import codex_adapter as adapter
from cli_setups import codex_inputs as inputs
from cli_setups import codex_request
from cli_setups import codex_shell as shell
from cli_setups import codex_texts as texts
from swell.adapters.base import (
    AgentRequest,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentUsageUpdate,
)
from swell.adapters.codex import CodexAdapter, sandbox_mode, toml_value
from twins.server import Reply, Twin

real_cli = pytest.mark.agent_cli


def request(tmp_path: Path, prompt: str = "do the task", **fields: Any) -> AgentRequest:
    return codex_request(tmp_path, None, prompt, **fields)


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
    assert ("Write", "notes/hello.txt") in [(c.name, c.target) for c in calls]
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
def test_wave_star_with_every_writer_denied_is_a_read_only_sandbox(tmp_path: Path) -> None:
    # a Wave persona's "*" (without adapter defaults) is the workspace-write sandbox
    # (test_cli_conformance.py), unless every tool that writes is denied; codex cannot
    # refuse one command, so nothing else holds `rm` back (swell says so: unenforced)
    replies = [
        Reply(tool_calls=[shell(f"apply_patch <<'EOF'\n{PATCH}EOF\n")]),
        Reply(tool_calls=[shell("rm keep.txt")]),
        Reply(text="done"),
    ]
    denied = ["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]
    with Twin(replies, protocols=("openai_responses",)) as twin:
        req = request(tmp_path, allowed_tools=["*"], denied_tools=denied)
        (req.workspace / "keep.txt").write_text("keep\n")
        _, result = drive(adapter(tmp_path, cli_path("codex"), twin), req)

    assert result.success, result.error
    assert not (req.workspace / "notes" / "hello.txt").exists()
    assert result.files_changed == []
    assert (req.workspace / "keep.txt").exists()
    assert len(twin.model_calls) == 3
    outputs = [
        str(item.get("output"))
        for item in inputs(twin.model_calls[-1].body)
        if item.get("type") == "function_call_output"
    ]
    assert "read-only sandbox" in outputs[0]  # the patch
    assert "Read-only file system" in outputs[1]  # the shell's `rm`


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
