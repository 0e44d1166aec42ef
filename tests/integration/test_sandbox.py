"""`runtime.sandbox.enabled: true`: every process of a step runs inside bubblewrap, driven
through `swell run` as a user would. Real bwrap: a machine without it fails these tests
(install bubblewrap; .ci/run does)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path
from conftest import events, run_id_of, swell, wait_for, write_pipeline
from twins.server import Reply, ToolCall, Twin

MANIFEST = """
kind: WaveManifest
metadata: {{name: boxed}}
runtime:
  sandbox:
    enabled: true
    env_passthrough: [PASSED_VAR]
{extra}"""

# every way out of the workspace it tries is written down; the step fails if any worked
ESCAPES = """
kind: WavePipeline
metadata: {{name: escape}}
steps:
  - id: try
    type: command
    script: |
      echo inside > mine.txt
      echo private > /tmp/escaped-{tag}
      for p in "{home}/escaped" "{project}/escaped" "{state}/escaped" \\
               "{other}/escaped" /etc/escaped "$SWELL_PROJECT_ROOT/.agents/escaped"; do
        (echo x > "$p") 2>/dev/null && echo "WROTE $p" >> report.txt
      done
      ln -s "{home}/.ssh/authorized_keys" planted-link
      (echo x > planted-link) 2>/dev/null && echo "WROTE through a link" >> report.txt
      cat "{home}/.ssh/id_rsa" 2>/dev/null && echo "READ the key" >> report.txt
      cat "{other}/secret.txt" 2>/dev/null && echo "READ the other run" >> report.txt
      cat "{state}/state.db" > /dev/null 2>&1 && echo "READ the store" >> report.txt
      ls "{state}/runs" "{state}/workspaces" | grep -v -e "$SWELL_RUN_ID" -e : -e '^$' \\
        && echo "LISTED other runs" >> report.txt
      echo "secret=${{SECRET_TOKEN:-unset}} passed=${{PASSED_VAR:-unset}}" >> report.txt
      echo "home=$HOME" >> report.txt
      true
"""


def _tree(root: Path, *skip: Path) -> dict[str, float]:
    """Every file under `root` (but those under `skip`) with its modification time."""
    found = {}
    for path in root.rglob("*"):
        if any(s in path.parents or path == s for s in skip):
            continue
        found[str(path)] = path.lstat().st_mtime
    return found


@pytest.fixture
def fake_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----\n")
    return home


STAND_IN = Path(__file__).resolve().parent.parent / "twins" / "docker_cli" / "docker"


class Backend:
    """The sandbox table runs against each backend: bubblewrap, and docker through a
    stand-in `docker` (tests/twins/docker_cli: it checks swell's `docker run` argv and
    runs the command in bwrap with the same isolation; no Docker engine here)."""

    def __init__(self, name: str, tmp_path: Path) -> None:
        self.name = name
        self.bin = tmp_path / "docker-bin"
        if name == "docker":
            self.bin.mkdir()
            shutil.copy(STAND_IN, self.bin / "docker")

    def manifest(self, extra: str = "") -> str:
        text = MANIFEST.format(extra=extra)
        if self.name == "docker":
            text = text.replace("enabled: true", "backend: docker\n    docker_image: debian:12")
        return text

    def env(self, home: Path, **more: str) -> dict[str, str]:
        found = _env(home, **more)
        if self.name == "docker":
            found["PATH"] = f"{self.bin}{os.pathsep}{found['PATH']}"
        return found

    def containers(self, run_id: str) -> list[str]:
        """The run's containers the stand-in daemon has (`docker ps`, by their label)."""
        label = f"label=swell.run={run_id}"
        done = subprocess.run(
            [str(self.bin / "docker"), "ps", "-a", "-q", "--filter", label],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.split()

    def runs(self) -> list[dict[str, Any]]:
        """What `docker run` was given (the stand-in's log)."""
        log = self.bin / "docker.log"
        lines = log.read_text().splitlines() if log.exists() else []
        return [json.loads(line) for line in lines]


@pytest.fixture(params=["bubblewrap", "docker"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend(request.param, tmp_path)


def _env(home: Path, **more: str) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "SECRET_TOKEN": "s3cr3t-value",
        "PASSED_VAR": "passed-value",
        **more,
    }


def test_a_sandboxed_command_step_sees_only_its_workspace(
    tmp_path: Path, fake_home: Path, isolated_state: Path, backend: Backend
) -> None:
    assert shutil.which("bwrap"), "bwrap is missing: apt-get install bubblewrap"
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(backend.manifest())
    _env = backend.env
    # another run's workspace, with a file of its own
    first = swell("run", "plant", cwd=project, env=_env(fake_home))
    assert first.returncode != 0  # no such pipeline yet: nothing was recorded
    write_pipeline(
        project,
        "plant",
        "kind: WavePipeline\nmetadata: {name: plant}\nsteps:\n"
        "  - {id: p, type: command, script: 'echo other > secret.txt'}\n",
    )
    planted = swell("run", "plant", cwd=project, env=_env(fake_home))
    assert planted.returncode == 0, planted.stdout + planted.stderr
    other = isolated_state / "workspaces" / run_id_of(planted.stdout)
    assert (other / "secret.txt").read_text() == "other\n"
    write_pipeline(
        project,
        "escape",
        ESCAPES.format(
            home=fake_home, project=project, state=isolated_state, other=other, tag=tmp_path.name
        ),
    )
    before = _tree(tmp_path, isolated_state, backend.bin)  # (the stand-in docker's log)
    result = swell("run", "escape", cwd=project, env=_env(fake_home))
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    workspace = isolated_state / "workspaces" / run_id
    report = (workspace / "report.txt").read_text()
    assert "WROTE" not in report and "READ" not in report and "LISTED" not in report, report
    assert "secret=unset passed=passed-value" in report
    home = isolated_state / "runs" / run_id / ".home"
    assert f"home={home}" in report
    assert (workspace / "mine.txt").read_text() == "inside\n"
    assert _tree(tmp_path, isolated_state, backend.bin) == before  # nothing outside changed
    assert not list(Path("/tmp").glob(f"escaped-{tmp_path.name}"))
    assert not any("sandbox" in e.get("message", "") for e in events(project, run_id))
    if backend.name == "docker":  # each process a container of the image; values by name
        runs = backend.runs()
        assert runs and all(r["image"] == "debian:12" for r in runs)
        assert not [r for r in runs if "s3cr3t-value" in json.dumps(r["argv"])]
        assert not [r for r in runs if "SECRET_TOKEN" in r["env"]]


@pytest.fixture
def web() -> Iterator[int]:
    """An HTTP server on 127.0.0.1 (its port): what a step may or may not reach."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


def test_the_network_is_the_allow_list_through_swells_proxy(
    tmp_path: Path, fake_home: Path, isolated_state: Path, web: int, backend: Backend
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    allowed = '    default_allowed_domains: ["127.0.0.1"]\n'
    (project / "wave.yaml").write_text(backend.manifest() + allowed)
    _env = backend.env
    write_pipeline(
        project,
        "net",
        f"""
kind: WavePipeline
metadata: {{name: net}}
steps:
  - id: fetch
    type: command
    script: |
      get() {{ curl -sS -m 10 -o /dev/null -w '%{{http_code}}' "$@" 2>/dev/null; }}
      echo "allowed=$(get http://127.0.0.1:{web}/)" >> report.txt
      echo "other-name=$(get http://localhost:{web}/)" >> report.txt
      echo "tunnel=$(get -p http://localhost:{web}/)" >> report.txt
      echo "direct=$(get --noproxy '*' http://127.0.0.1:{web}/)" >> report.txt
      echo "direct-other=$(get --noproxy '*' http://127.0.0.2:{web}/)" >> report.txt
""",
    )
    result = swell("run", "net", cwd=project, env=_env(fake_home))
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    report = (isolated_state / "workspaces" / run_id / "report.txt").read_text().split()
    assert report == [
        "allowed=200",  # through the proxy
        "other-name=403",  # refused by the proxy: not in allowed_domains
        "tunnel=000",  # CONNECT refused too
        "direct=000",  # no route out of the sandbox
        "direct-other=000",
    ]
    assert f"refused: localhost:{web} is not in allowed_domains" in result.stdout
    seen = [
        (e["host"], e["port"], e["allowed"])
        for e in events(project, run_id)
        if e["type"] == "sandbox.connection"
    ]
    assert seen == [("127.0.0.1", web, True), ("localhost", web, False), ("localhost", web, False)]


def test_contract_commands_run_in_the_sandbox_too(
    tmp_path: Path, fake_home: Path, backend: Backend
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(backend.manifest())
    _env = backend.env
    key = fake_home / ".ssh" / "id_rsa"
    # passes only where the key and the secret cannot be seen, and the write stays inside
    check = f'test ! -e {key} && test -z "$SECRET_TOKEN" && echo ok > checked.txt'
    write_pipeline(
        project,
        "checked",
        f"""
kind: WavePipeline
metadata: {{name: checked}}
steps:
  - id: build
    type: command
    script: echo built > built.txt
    handover:
      contract: {{type: test_suite, command: '{check}'}}
""",
    )
    result = swell("run", "checked", cwd=project, env=_env(fake_home))
    assert result.returncode == 0, result.stdout + result.stderr
    unboxed = swell("run", "checked", "--no-sandbox", cwd=project, env=_env(fake_home))
    assert unboxed.returncode != 0  # the same contract, without the sandbox, sees both
    assert "contract 1 (test_suite) of step 'build' failed" in unboxed.stdout


def test_no_sandbox_is_warned_about_and_recorded(tmp_path: Path, fake_home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(MANIFEST.format(extra=""))
    write_pipeline(
        project,
        "env",
        "kind: WavePipeline\nmetadata: {name: env}\nsteps:\n"
        "  - {id: e, type: command, script: 'echo \"secret=$SECRET_TOKEN\" > seen.txt'}\n",
    )
    result = swell("run", "env", "--no-sandbox", cwd=project, env=_env(fake_home))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--no-sandbox: runtime.sandbox (bubblewrap) is off for this run" in result.stdout
    run_id = run_id_of(result.stdout)
    warnings = [e["message"] for e in events(project, run_id) if e["type"] == "warning"]
    assert any("--no-sandbox" in w for w in warnings)


def test_a_sandbox_that_cannot_run_here_refuses_the_run(tmp_path: Path, fake_home: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(
        MANIFEST.format(extra="").replace("enabled: true", "backend: docker")
    )
    write_pipeline(
        project,
        "env",
        "kind: WavePipeline\nmetadata: {name: env}\nsteps:\n  - {id: e, type: command, script: 'true'}\n",
    )
    nowhere = _env(fake_home, DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock")
    result = swell("run", "env", cwd=project, env=nowhere)
    assert result.returncode != 0
    assert "runtime.sandbox.backend is docker, but no Docker daemon answers" in result.stderr
    assert "start Docker, or set runtime.sandbox.backend: bubblewrap" in result.stderr
    assert "Traceback" not in result.stderr
    assert swell("list", cwd=project).stdout.count("env") == 0  # no run was recorded
    # and a machine without bwrap says how to install it
    (project / "wave.yaml").write_text(MANIFEST.format(extra=""))
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink(shutil.which("sh") or "/bin/sh", bare / "sh")
    result = swell("run", "env", cwd=project, env=_env(fake_home, PATH=str(bare)))
    assert result.returncode != 0
    assert "apt-get install bubblewrap" in result.stderr


def test_a_bwrap_that_cannot_sandbox_refuses_the_run_after_one_that_could(
    tmp_path: Path, fake_home: Path
) -> None:
    """A bwrap that made a sandbox is not probed again at each run's start; another
    bwrap (here one refused its namespaces) is, and refuses the run with the fix."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(MANIFEST.format(extra=""))
    write_pipeline(
        project,
        "env",
        "kind: WavePipeline\nmetadata: {name: env}\nsteps:\n  - {id: e, type: command, script: 'true'}\n",
    )
    for _ in range(2):  # the second run's start finds the first's probe
        result = swell("run", "env", cwd=project, env=_env(fake_home))
        assert result.returncode == 0, result.stdout + result.stderr
    refused = tmp_path / "refused"
    refused.mkdir()
    (refused / "bwrap").write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"
    )
    (refused / "bwrap").chmod(0o755)
    env = _env(fake_home, PATH=f"{refused}{os.pathsep}{os.environ['PATH']}")
    result = swell("run", "env", cwd=project, env=env)
    assert result.returncode != 0
    assert "cannot make a sandbox here (bwrap: No permissions" in result.stderr
    assert "unprivileged user namespaces" in result.stderr and "Traceback" not in result.stderr


HANG = """
kind: WavePipeline
metadata: {name: hang}
steps:
  - id: h
    type: command
    script: |
      if [ -f started ]; then echo resumed > resumed; exit 0; fi
      setsid sleep 1000 > /dev/null 2>&1 &
      nohup sleep 1000 > /dev/null 2>&1 &
      echo started > started
      sleep 1000
"""


def _killed_during_a_visit(
    tmp_path: Path, fake_home: Path, isolated_state: Path, backend: Backend
) -> tuple[Path, str, Path]:
    """(the project, the run, its workspace) of a `swell run` killed with -9 while its
    sandboxed step runs."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text(backend.manifest())
    write_pipeline(project, "hang", HANG)
    out = tmp_path / "swell.out"
    with out.open("w") as sink:
        swell_proc = subprocess.Popen(
            [*_swell_argv(), "run", "hang"],
            cwd=project,
            env=backend.env(fake_home),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    first = wait_for(lambda: out.read_text().partition("\n")[1] and out.read_text())
    run_id = run_id_of(first)
    workspace = isolated_state / "workspaces" / run_id
    wait_for(lambda: (workspace / "started").exists(), timeout=60)
    marker = f"SWELL_RUN_ID={run_id}"
    wait_for(lambda: len(_pids(marker, "sleep")) == 3, timeout=30)
    if backend.name == "bubblewrap":
        assert _pids(marker, "bwrap")  # they run inside it
    else:  # (a container: its bwrap is the stand-in daemon's, which has no markers)
        assert len(backend.containers(run_id)) == 1
    os.kill(swell_proc.pid, signal.SIGKILL)
    swell_proc.wait()
    return project, run_id, workspace


def test_kill_9_of_swell_leaves_no_sandboxed_process_and_resume_finishes(
    tmp_path: Path, fake_home: Path, isolated_state: Path, backend: Backend
) -> None:
    project, run_id, workspace = _killed_during_a_visit(
        tmp_path, fake_home, isolated_state, backend
    )
    marker = f"SWELL_RUN_ID={run_id}"
    if backend.name == "bubblewrap":
        wait_for(lambda: not _pids(marker), timeout=30)  # bwrap and everything inside it
    else:  # a container is the daemon's: it outlives swell and its `docker run` client
        assert len(backend.containers(run_id)) == 1
    result = swell("resume", run_id, cwd=project, env=backend.env(fake_home))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (workspace / "resumed").exists()
    assert not _pids(marker)
    if backend.name == "docker":  # resume removed the container the killed swell left
        assert backend.containers(run_id) == []
        assert any(
            e["type"] == "warning" and "container(s) of this run" in e["message"]
            for e in events(project, run_id)
        )


def test_clean_removes_the_containers_a_killed_swell_left(
    tmp_path: Path, fake_home: Path, isolated_state: Path
) -> None:
    """A run whose swell was killed and which is never resumed: `swell clean --run`
    removes its containers with its workspace (docker backend: nothing else ends them)."""
    backend = Backend("docker", tmp_path)
    project, run_id, _ = _killed_during_a_visit(tmp_path, fake_home, isolated_state, backend)
    (left,) = backend.containers(run_id)
    result = swell("clean", "--run", run_id, cwd=project, env=backend.env(fake_home))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"removed 1 container(s) of these runs: {left}" in result.stdout
    assert backend.containers(run_id) == []
    wait_for(lambda: not _pids(f"SWELL_RUN_ID={run_id}", "sleep"), timeout=30)


def _swell_argv() -> list[str]:
    from conftest import swell_cmd

    return swell_cmd()


def _pids(marker: str, name: str | None = None) -> list[int]:
    """Processes whose environment holds `marker` (and named `name`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
                comm = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if marker.encode() in environ and name in (None, comm):
                found.append(int(entry.name))
    return found


@pytest.mark.agent_cli
def test_claude_runs_inside_the_sandbox_and_writes_in_its_workspace(
    tmp_path: Path, fake_home: Path, isolated_state: Path
) -> None:
    binary = cli_path("claude")
    project = tmp_path / "project"
    project.mkdir()
    extra = f"""adapters:
  claude: {{binary: {binary}}}
personas:
  coder:
    adapter: claude
    model: claude-sonnet-4-5
    permissions: {{allowed_tools: [Read, Write, Bash]}}
"""
    (project / "wave.yaml").write_text(MANIFEST.format(extra=extra))
    write_pipeline(
        project,
        "agent",
        """
kind: WavePipeline
metadata: {name: agent}
steps:
  - id: implement
    persona: coder
    exec: {type: prompt, source: "Write greeting.txt, then try to read the key."}
""",
    )
    key = fake_home / ".ssh" / "id_rsa"
    replies = [
        Reply(tool_calls=[ToolCall("Write", {"file_path": "greeting.txt", "content": "hello\n"})]),
        Reply(
            tool_calls=[
                ToolCall(
                    "Bash",
                    {"command": f"cat {key} || echo no-key; echo secret=${{SECRET_TOKEN:-unset}}"},
                )
            ]
        ),
        Reply(text="Done."),
    ]
    before = _tree(fake_home, isolated_state)
    with Twin(replies, protocols=("anthropic",)) as twin:
        env = _env(
            fake_home,
            ANTHROPIC_BASE_URL=twin.url,
            ANTHROPIC_API_KEY="dummy",
            XDG_RUNTIME_DIR=str(tmp_path),
        )
        result = swell("run", "agent", cwd=project, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert (isolated_state / "workspaces" / run_id / "greeting.txt").read_text() == "hello\n"
    bash_result = json.dumps(twin.model_calls[2].body["messages"][-1])
    assert "no-key" in bash_result and "PRIVATE KEY" not in bash_result
    assert "secret=unset" in bash_result
    # the CLI's own files went to the run's HOME, not the user's
    assert _tree(fake_home, isolated_state) == before
    assert (isolated_state / "runs" / run_id / ".home" / ".claude").is_dir()
    # its model endpoint was let through the sandbox's proxy, and recorded
    host, port = twin.url.removeprefix("http://").split(":")
    connections = [e for e in events(project, run_id) if e["type"] == "sandbox.connection"]
    assert connections and all(e["allowed"] for e in connections)
    assert {(e["host"], e["port"]) for e in connections} == {(host, int(port))}
