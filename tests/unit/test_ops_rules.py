"""The rules behind the pre-run checks, credentials, --from-step and log filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from swell.events import models as ev
from swell.manifest.models import InputConfig, Pipeline
from swell.ops.logs import is_error, since_time
from swell.ops.preflight import can_write
from swell.ops.rerun import rerun_steps
from swell.ops.toolchain import credentials


@pytest.mark.parametrize(
    ("allowed", "denied", "writes"),
    [
        ([], [], True),  # the adapter's defaults
        (["Read", "Write"], [], True),
        (["Read", "Edit"], [], True),
        (["Read", "Write(docs/**)"], [], True),  # a writer limited to some paths still writes
        (["Read", "Bash"], [], True),
        (["Read", "Bash(git log *)"], [], False),  # a shell limited to some commands
        (["Read", "Grep", "Glob"], [], False),
        (["read_file", "write_file"], [], True),  # gemini's names
        (["Read", "Write"], ["Write"], False),
        (["Read", "Write", "Edit"], ["Write"], True),
        ([], ["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"], False),
        ([], ["Bash(rm *)"], True),  # a pattern narrows, does not take away
    ],
)
def test_can_write(allowed: list[str], denied: list[str], writes: bool) -> None:
    assert can_write(allowed, denied) is writes


@pytest.mark.parametrize(
    ("config", "required"),
    [
        ({}, False),
        ({"source": "cli", "example": "x"}, False),
        ({"type": "string"}, False),
        ({"type": "issue_ref"}, True),
        ({"type": "pr_ref", "source": "cli"}, True),
    ],
)
def test_required_input(config: dict[str, str], required: bool) -> None:
    assert InputConfig.model_validate(config).required is required


def test_credentials_from_the_environment_and_login_files(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    found = credentials("claude", {}, {**home, "ANTHROPIC_API_KEY": "k"})
    assert found is not None and found.ok and found.found == "$ANTHROPIC_API_KEY"
    missing = credentials("claude", {}, home)
    assert missing is not None and missing.ok is False
    assert missing.fix.startswith("export ANTHROPIC_API_KEY=...")
    login = tmp_path / ".claude" / ".credentials.json"
    login.parent.mkdir()
    login.write_text("{}")
    by_login = credentials("claude", {}, home)
    assert by_login is not None and by_login.ok and by_login.found == "~/.claude/.credentials.json"
    # CLAUDE_CONFIG_DIR moves the login file
    moved = credentials("claude", {}, {**home, "CLAUDE_CONFIG_DIR": str(tmp_path / "elsewhere")})
    assert moved is not None and moved.ok is False
    # codex: CODEX_HOME/auth.json
    (tmp_path / "ch").mkdir()
    (tmp_path / "ch" / "auth.json").write_text("{}")
    codex = credentials("codex", {}, {**home, "CODEX_HOME": str(tmp_path / "ch")})
    assert codex is not None and codex.ok
    # opencode / codex / openai pointed at a server of your own
    assert credentials("opencode", {"base_url": "http://127.0.0.1:9/v1"}, home).ok  # type: ignore[union-attr]
    own_key = credentials("opencode", {"base_url": "http://x/v1", "api_key_env": "MINE"}, home)
    assert own_key is not None and own_key.ok is False and own_key.wanted[0] == "MINE"
    assert credentials("openai", {"api_key_env": "MINE"}, {**home, "MINE": "k"}).ok  # type: ignore[union-attr]
    assert credentials("openai", {}, {**home, "OPENAI_BASE_URL": "http://localhost:8000/v1"}).ok  # type: ignore[union-attr]
    # adapters that need nothing, or that swell does not know
    assert credentials("local", {}, home) is None
    assert credentials("my-plugin", {}, home) is None


def test_rerun_steps_are_the_step_and_everything_depending_on_it() -> None:
    pipeline = Pipeline.model_validate(
        yaml.safe_load(
            """
            kind: WavePipeline
            steps:
              - {id: a, script: "true"}
              - {id: b, dependencies: [a], script: "true"}
              - {id: x, dependencies: [a], script: "true"}
              - {id: c, dependencies: [b], script: "true"}
              - {id: d, dependencies: [c, x], script: "true"}
            """
        )
    )
    assert rerun_steps(pipeline, "b") == {"b", "c", "d"}
    assert rerun_steps(pipeline, "x") == {"x", "d"}
    assert rerun_steps(pipeline, "a") == {"a", "b", "x", "c", "d"}
    assert rerun_steps(pipeline, "d") == {"d"}


def test_since_time() -> None:
    now = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)
    assert since_time("10m", now) == now - timedelta(minutes=10)
    assert since_time("1d", now) == now - timedelta(days=1)
    assert since_time("2025-01-31T11:00:00Z", now) == datetime(2025, 1, 31, 11, 0, tzinfo=UTC)
    assert since_time("2025-01-31T11:00:00", now) == datetime(2025, 1, 31, 11, 0, tzinfo=UTC)
    assert since_time(None, now) is None
    with pytest.raises(ValueError, match="invalid --since"):
        since_time("yesterday", now)


@pytest.mark.parametrize(
    ("event", "error"),
    [
        (ev.StepFinished(outcome="failure"), True),
        (ev.StepFinished(outcome="success"), False),
        (ev.RunFinished(status="succeeded"), False),
        (ev.RunFinished(status="cancelled"), True),
        (ev.BreakerTripped(error_key="k", count=3), True),
        (ev.StepInterrupted(reason="x"), True),
        (ev.Warning(message="w"), False),
        (ev.ContextSet(key="k", value="v"), False),
    ],
)
def test_what_logs_errors_keeps(event: ev.BaseEvent, error: bool) -> None:
    assert is_error(event) is error
