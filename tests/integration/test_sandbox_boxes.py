"""One long-lived box per (run, sandbox shape) (runtime.sandbox, real bwrap): the command
steps of a run that share a workspace run in one bwrap, started once; what one visit left
in /tmp or left running is gone before the next visit's process starts
(docs/security.md, "One box per run and shape")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agent_clis import cli_path
from conftest import events, run_id_of, start_swell, swell, wait_for, write_pipeline
from twins.server import Reply, ToolCall, Twin

MANIFEST = """
kind: WaveManifest
metadata: {name: boxes}
runtime:
  sandbox: {enabled: true}
"""

# `env -i` drops the visit's markers, so only the visit's pids cgroup can find it
FIRST = """
readlink /proc/self/ns/pid > first.ns
echo private > /tmp/left-by-first
setsid env -i sleep 1000 > /dev/null 2>&1 < /dev/null &
"""
SECOND = """
readlink /proc/self/ns/pid > second.ns
ls -A /tmp > second.tmp
for p in /proc/[0-9]*; do cat "$p/comm" 2>/dev/null; done | grep -c '^sleep$' > second.sleeps
true
"""


def test_visits_of_a_run_share_one_box_and_not_what_each_left(tmp_path: Path) -> None:
    assert shutil.which("bwrap"), "bwrap is missing: apt-get install bubblewrap"
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(MANIFEST)
    steps = [
        {"id": "first", "type": "command", "script": FIRST},
        {"id": "second", "type": "command", "dependencies": ["first"], "script": SECOND},
    ]
    pipeline = {"kind": "WavePipeline", "metadata": {"name": "two"}, "steps": steps}
    write_pipeline(project, "two", json.dumps(pipeline))
    result = swell("run", "two", cwd=project, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    status = swell("status", run_id_of(result.stdout), "-o", "json", cwd=project)
    workspace = Path(json.loads(status.stdout)["workspace"])
    # one pid namespace: the same bwrap ran both visits' processes
    first, second = (workspace / "first.ns").read_text(), (workspace / "second.ns").read_text()
    assert first.startswith("pid:[") and first == second
    # the box's /tmp was emptied between the visits (the workspace, mounted below it
    # when the state directory is under /tmp, is kept)
    assert "left-by-first" not in (workspace / "second.tmp").read_text()
    # and what the first visit left running, out of its session and without its markers,
    # was ended with it
    assert (workspace / "second.sleeps").read_text().strip() == "0"


def _claude_step(step_id: str, after: str | None) -> dict[str, object]:
    step: dict[str, object] = {
        "id": step_id,
        "persona": "coder",
        "exec": {"type": "prompt", "source": f"note your namespace in {step_id}.ns"},
    }
    if after:
        step["dependencies"] = [after]
    return step


@pytest.mark.agent_cli
def test_agent_visits_of_a_run_share_one_box_and_each_its_own_proxy(
    tmp_path: Path, isolated_state: Path
) -> None:
    """Two claude visits of a run run in one box (started once, not a bwrap per visit),
    and each reaches its model through a proxy of its own (its connections are its own
    visit's events)."""
    project = tmp_path / "project"
    project.mkdir()
    pipeline = {
        "kind": "WavePipeline",
        "metadata": {"name": "two"},
        "steps": [_claude_step("first", None), _claude_step("second", "first")],
    }
    write_pipeline(project, "two", json.dumps(pipeline))

    def note(name: str) -> Reply:
        command = f"readlink /proc/self/ns/pid > {name}.ns; echo $HTTPS_PROXY > {name}.proxy"
        return Reply(tool_calls=[ToolCall("Bash", {"command": command})])

    replies = [note("first"), Reply(text="Done."), note("second"), Reply(text="Done.")]
    with Twin(replies, protocols=("anthropic",)) as twin:
        (project / "wave.yaml").write_text(f"""
kind: WaveManifest
metadata: {{name: agent-box}}
runtime: {{sandbox: {{enabled: true}}}}
adapters: {{claude: {{binary: {cli_path("claude")}}}}}
personas:
  coder: {{adapter: claude, model: claude-sonnet-4-5, permissions: {{allowed_tools: ["*"]}}}}
""")
        env = {
            **os.environ,
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": twin.url,
            "ANTHROPIC_API_KEY": "dummy",
        }
        result = swell("run", "two", cwd=project, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    workspace = isolated_state / "workspaces" / run_id
    first, second = (workspace / "first.ns").read_text(), (workspace / "second.ns").read_text()
    assert first.startswith("pid:[") and first == second
    # each visit's own forwarder (a port of its own on the box's loopback)
    proxies = [(workspace / f"{n}.proxy").read_text().strip() for n in ("first", "second")]
    assert all(p.startswith("http://127.0.0.1:") for p in proxies) and proxies[0] != proxies[1]
    host = twin.url.removeprefix("http://").split(":")[0]
    connections = [e for e in events(project, run_id) if e["type"] == "sandbox.connection"]
    for step in ("first", "second"):
        own = [e for e in connections if e["step_id"] == step]
        assert own and all(e["allowed"] and e["host"] == host for e in own), connections


# a stand-in claude CLI that waits, in its workspace, until the test has looked
WAITING_CLI = """#!/bin/sh
touch agent.ready
while [ ! -e go ]; do sleep 0.05; done
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'
"""
WAITING_COMMAND = "touch command.ready; while [ ! -e go ]; do sleep 0.05; done"


def _boxes_of(run_id: str) -> int:
    """The bwraps running for `run_id` (each box is a bwrap and its child, bwrap too)."""
    marker = f"SWELL_RUN_ID={run_id}".encode()
    found: dict[int, int] = {}  # pid -> parent, of the run's bwraps
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and (entry / "comm").read_text().strip() == "bwrap"
                and marker in (entry / "environ").read_bytes().split(b"\0")
            ):
                found[int(entry.name)] = int((entry / "stat").read_text().split(")")[1].split()[1])
        except OSError:
            continue
    return sum(1 for parent in found.values() if parent not in found)


def test_a_runs_first_visits_find_their_boxes_started(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The boxes of a run's first visits (an agent step's, a command step's) are started
    with the run, while it starts (docs/performance.md, "Sandbox"): each visit finds the
    one started for it, and no other box is started."""
    project = tmp_path / "project"
    project.mkdir()
    cli = tmp_path / "bin" / "claude"
    cli.parent.mkdir()
    cli.write_text(WAITING_CLI)
    cli.chmod(0o755)
    (project / "wave.yaml").write_text(f"""
kind: WaveManifest
metadata: {{name: first-boxes}}
runtime: {{sandbox: {{enabled: true}}}}
adapters: {{claude: {{binary: {cli}}}}}
personas:
  coder: {{adapter: claude, model: claude-sonnet-4-5}}
""")
    steps = [
        {"id": "ask", "persona": "coder", "exec": {"type": "prompt", "source": "say done"}},
        {"id": "check", "type": "command", "script": WAITING_COMMAND},
    ]
    pipeline = {"kind": "WavePipeline", "metadata": {"name": "first"}, "steps": steps}
    write_pipeline(project, "first", json.dumps(pipeline))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    proc = start_swell("run", "first", cwd=project)
    try:
        assert proc.stdout is not None
        run_id = run_id_of(proc.stdout.readline())
        workspace = isolated_state / "workspaces" / run_id
        ready = [workspace / "agent.ready", workspace / "command.ready"]
        wait_for(lambda: all(r.exists() for r in ready), timeout=120)  # both visits run
        boxes = _boxes_of(run_id)
        (workspace / "go").touch()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    assert boxes == 2  # the agent CLI's box and the command's, each started once


def test_a_run_refused_after_its_boxes_started_leaves_nothing(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandboxed run's first boxes start as soon as its pipeline is read, before the
    run is checked and recorded (docs/performance.md, "Sandbox"): a run then refused (its
    agent has no credentials) leaves no workspace, no run directory and no box behind."""
    project = tmp_path / "project"
    project.mkdir()
    cli = tmp_path / "bin" / "claude"
    cli.parent.mkdir()
    cli.write_text(WAITING_CLI)
    cli.chmod(0o755)
    (project / "wave.yaml").write_text(f"""
kind: WaveManifest
metadata: {{name: refused}}
runtime: {{sandbox: {{enabled: true}}}}
adapters: {{claude: {{binary: {cli}}}}}
personas:
  coder: {{adapter: claude, model: claude-sonnet-4-5}}
""")
    steps = [{"id": "ask", "persona": "coder", "exec": {"type": "prompt", "source": "say done"}}]
    pipeline = {"kind": "WavePipeline", "metadata": {"name": "refused"}, "steps": steps}
    write_pipeline(project, "refused", json.dumps(pipeline))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    result = swell("run", "refused", cwd=project, timeout=120)
    assert result.returncode != 0
    assert "not started" in result.stderr and "no credentials" in result.stderr
    assert "Traceback" not in result.stderr
    for kept in ("workspaces", "runs"):
        where = isolated_state / kept
        assert not where.exists() or not any(where.iterdir()), list(where.iterdir())
    wait_for(lambda: _boxes_of_pipeline("refused") == 0, timeout=30)


def _boxes_of_pipeline(pipeline: str) -> int:
    """The bwraps running for a run of `pipeline` (run ids start with its name)."""
    marker = f"SWELL_RUN_ID={pipeline}-".encode()
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and (entry / "comm").read_text().strip() == "bwrap"
                and any(v.startswith(marker) for v in (entry / "environ").read_bytes().split(b"\0"))
            ):
                count += 1
        except OSError:
            continue
    return count
