"""End-to-end conformance harness: Wave-format pipelines run through `swell run` with a
real agent CLI (Claude Code by default; Codex, the Gemini CLI or opencode with
`adapter=`), against the auto twin (twins/auto.py) on 127.0.0.1.

Another CLI is chosen as a user would: `swell run --adapter NAME` switches every
persona's steps (reviews and judges included) to it. The CLI is pointed at the twin
through its own settings in the harness's HOME (Gemini: GOOGLE_GEMINI_BASE_URL and
~/.gemini/settings.json) or, for Codex and opencode, which a user points at a
gateway in wave.yaml, through `adapters.NAME.options.base_url` written into the
scratch project's wave.yaml (and committed there).

`Harness.run(project, pipeline, input)` runs one pipeline as a user would (`python -m
swell run NAME --auto-approve --input ...`), with the stand-in forge CLIs and `go` on
PATH (forge_standins.py), then reads back what swell stored: the exit code, the final
status (`swell status -o json`), the first error (descending into failed child runs),
the visits, and two checks over every stored prompt (`swell logs -o json`, children
included):

- no prompt holds an unrendered `{{ ... }}` whose name is one of Wave's template
  variables (other `{{ ... }}`, such as `{{ '<id>' }}`-style prose, are only listed);
- every input artifact a prompt lists exists when the agent starts (the twin checks
  the paths in the agent's own working directory as the request arrives).

Projects are scratch git repositories with a github-looking `origin`, so forge
detection gives `github`; `wave_project()` extracts Wave's own checkout
($SWELL_WAVE_REPO, pinned to WAVE_COMMIT), `fixture_project()` copies one of ours.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from forge_standins import calls as standin_calls
from forge_standins import install as install_standins

from twins.auto import AutoModel, Tally
from twins.server import Reply, Request, Twin

# `--sandbox`: Wave's own wave.yaml (at WAVE_COMMIT) has no runtime.sandbox; this is
# what a Wave user turning it on writes, plus the forge tokens Wave's token-scope check
# wants in env_passthrough and the git identity the harness gives its commits
SANDBOX = {
    "enabled": True,
    "env_passthrough": [
        "GH_TOKEN",
        "GITLAB_TOKEN",
        "GITEA_TOKEN",
        "GIT_AUTHOR_*",
        "GIT_COMMITTER_*",
    ],
}
WAVE_COMMIT = "6b82c89e"  # the commit of re-cinq/wave whose 46 pipelines are measured
WAVE_ENV = "SWELL_WAVE_REPO"
ORIGIN = "https://github.com/re-cinq/wave.git"
DEFAULT_INPUT = "testing swell"
# Inputs other than the pipeline's example: audit-webui-shots puts its input into a
# JSON list of browser actions (`"url": "{{ input }}"`), where Wave's example (a JSON
# object) cannot go; it gets a URL to navigate to instead, the twin's own ({twin})
INPUTS = {"audit-webui-shots": "{twin}/api/hello"}
# Wave's template variables (WAVE.md §3.11): a `{{ name... }}` left in a prompt whose
# first name is one of these is a placeholder swell failed to render
WAVE_VARIABLES = frozenset(
    {
        "input", "pipeline_id", "run", "pipeline_name", "pipeline_context", "branch_name",
        "feature_num", "step_id", "project", "forge", "artifacts", "deps", "gate", "env",
        "sub_pipeline_stop", "item", "iteration",
    }
)  # fmt: skip
# the CLI of each adapter the harness can run, and the protocol its twin speaks
ADAPTERS = {
    "claude": ("claude", "anthropic"),
    "codex": ("codex", "openai_responses"),
    "gemini": ("gemini", "gemini"),
    "opencode": ("opencode", "openai_chat"),
}
TWIN_KEY_ENV = "SWELL_TWIN_API_KEY"  # the key variable Codex and opencode send to the twin
CODEX_CONFIG = "[analytics]\nenabled = false\n\n[features]\nplugins = false\n"
GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},  # what a base URL needs
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "ide": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}
VARIABLE = re.compile(r"[A-Za-z_][\w-]*(?:\.[\w-]+|\[\d+\])*(?:\s*\|.*)?", re.S)
PLACEHOLDER = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)


class WaveCheckoutError(RuntimeError):
    """SWELL_WAVE_REPO is not the Wave checkout the harness is pinned to."""


# --------------------------------------------------------------------------- projects


def wave_checkout() -> Path | None:
    value = os.environ.get(WAVE_ENV)
    return Path(value) if value else None


def check_wave_commit(repo: Path) -> str:
    """The checkout's HEAD commit; WaveCheckoutError unless it is WAVE_COMMIT."""
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    head = done.stdout.strip()
    if done.returncode != 0 or not head:
        raise WaveCheckoutError(
            f"{WAVE_ENV}={repo} is not a git checkout of re-cinq/wave: {done.stderr.strip()}"
        )
    if not head.startswith(WAVE_COMMIT):
        raise WaveCheckoutError(
            f"{WAVE_ENV}={repo} is at commit {head[:12]}, but the harness is pinned to "
            f"{WAVE_COMMIT} (check out that commit, or update WAVE_COMMIT and the expected "
            "results together)"
        )
    return head


def wave_project(repo: Path, dest: Path) -> Path:
    """Wave's files at WAVE_COMMIT, extracted into `dest` as a fresh git repository."""
    check_wave_commit(repo)
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "HEAD"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return _init_git(dest)


def fixture_project(source: Path, dest: Path) -> Path:
    """A copy of one of our fixture projects, as a fresh git repository."""
    shutil.copytree(source, dest)
    return _init_git(dest)


def copy_project(template: Path, dest: Path) -> Path:
    """A copy of a prepared project (its git history included)."""
    shutil.copytree(template, dest, symlinks=True)
    return dest


def _init_git(root: Path) -> Path:
    env = {**os.environ, **_git_identity()}
    for args in (
        ["init", "-q", "-b", "main"],
        ["remote", "add", "origin", ORIGIN],
        ["add", "-A"],
        ["commit", "-q", "-m", "initial"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env)
    return root


def _git_identity() -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": "swell harness",
        "GIT_AUTHOR_EMAIL": "harness@example.com",
        "GIT_COMMITTER_NAME": "swell harness",
        "GIT_COMMITTER_EMAIL": "harness@example.com",
    }


def pipelines(project: Path) -> list[str]:
    return sorted(p.stem for p in (project / ".agents" / "pipelines").glob("*.yaml"))


def prerequisites(project: Path, pipeline: str) -> list[str]:
    """The pipelines whose outputs `pipeline` reads with `inject_artifacts: {pipeline: X}`
    (X other than itself). Run on its own, such a pipeline reads X's latest succeeded
    run in the project (in Wave it reads its parent's): the harness runs X first."""
    try:
        data = yaml.safe_load((project / ".agents" / "pipelines" / f"{pipeline}.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return []
    found: list[str] = []
    steps = list((data or {}).get("steps") or []) if isinstance(data, dict) else []
    while steps:
        step = steps.pop(0)
        if not isinstance(step, dict):
            continue
        steps += (step.get("loop") or {}).get("steps") or []
        for ref in (step.get("memory") or {}).get("inject_artifacts") or []:
            name = ref.get("pipeline") if isinstance(ref, dict) else None
            if name and name != pipeline and name not in found:
                found.append(str(name))
    return found


def example_input(project: Path, pipeline: str) -> str:
    """The pipeline's `input.example`, else DEFAULT_INPUT."""
    try:
        data = yaml.safe_load((project / ".agents" / "pipelines" / f"{pipeline}.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return DEFAULT_INPUT
    example = ((data or {}).get("input") or {}).get("example") if isinstance(data, dict) else None
    return str(example) if example not in (None, "") else DEFAULT_INPUT


# --------------------------------------------------------------------------- results


@dataclass
class Result:
    pipeline: str
    exit_code: int | None  # None: the harness's own timeout ended the run
    status: str
    first_error: str
    visits: int
    run_id: str | None
    seconds: float
    tally: Tally
    unrendered: list[str] = field(default_factory=list)  # "step: {{ x }}"
    prose_placeholders: list[str] = field(default_factory=list)
    missing_inputs: list[str] = field(default_factory=list)
    tool_errors: list[str] = field(default_factory=list)  # tool calls Claude Code refused or failed
    schema_sources: list[tuple[str, str]] = field(default_factory=list)  # see AutoModel
    # contracts that failed, even where their policy (skip, warn, continue) let the run go on
    contract_failures: list[str] = field(default_factory=list)
    forge_calls: list[list[str]] = field(default_factory=list)
    child_runs: int = 0
    visits_by_step: dict[str, int] = field(default_factory=dict)  # of the run itself
    child_pipelines: list[str] = field(default_factory=list)  # every child run's pipeline
    output: str = ""  # the tail of swell's stdout and stderr
    prerequisites: list[str] = field(default_factory=list)  # run first: "name (status)"

    @property
    def reached_end(self) -> bool:
        return self.exit_code == 0 and self.status == "succeeded"

    def row(self) -> str:
        notes = [f"after {', '.join(self.prerequisites)}"] if self.prerequisites else []
        if self.tally.schemas_from_project:
            notes.append(f"schema read from project x{self.tally.schemas_from_project}")
        if self.tally.schemas_missing:
            notes.append(f"json without a schema x{self.tally.schemas_missing}")
        if self.unrendered:
            notes.append(f"unrendered {', '.join(sorted(set(self.unrendered))[:3])}")
        if self.missing_inputs:
            notes.append(f"missing inputs {', '.join(self.missing_inputs[:3])}")
        if self.contract_failures:
            notes.append(f"contracts failed x{len(self.contract_failures)}")
        if self.tally.tool_errors:
            notes.append(f"tool errors x{self.tally.tool_errors}")
        cells = [
            self.pipeline,
            "timeout" if self.exit_code is None else str(self.exit_code),
            self.status,
            str(self.visits),
            f"{self.seconds:.0f}s",
            _cell(self.first_error, 300),
            _cell("; ".join(notes), 300),
        ]
        return "| " + " | ".join(cells) + " |"


TABLE_HEAD = (
    "| pipeline | exit | status | visits | time | first error | notes |\n"
    "|---|---|---|---|---|---|---|"
)


def _cell(text: str, cap: int) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= cap else text[: cap - 1] + "…"


# --------------------------------------------------------------------------- running


class Harness:
    """Runs pipelines with one agent CLI against the auto twin; one scratch area and one
    twin per harness (each run gets its own AutoModel). Use as a context manager, or
    call close()."""

    def __init__(
        self,
        work: Path,
        *,
        fail_first_review: bool = False,
        timeout_s: float = 1200,
        claude_dir: Path | None = None,
        swell_src: Path | None = None,
        adapter: str = "claude",
        sandbox: bool = False,
    ) -> None:
        """`sandbox`: run with `runtime.sandbox.enabled: true` in the project's wave.yaml
        (Wave's own wave.yaml leaves it out: see `SANDBOX`)."""
        if adapter not in ADAPTERS:
            raise ValueError(f"unknown adapter '{adapter}' (one of {', '.join(ADAPTERS)})")
        self.work = work
        self.fail_first_review = fail_first_review
        self.timeout_s = timeout_s
        self.claude_dir = claude_dir or agent_cli_bin()
        self.swell_src = swell_src  # None: the swell the environment imports
        self.adapter = adapter
        self.sandbox = sandbox
        self.home = work / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / ".gitconfig").write_text(
            "[user]\n\tname = swell harness\n\temail = harness@example.com\n"
            "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
        )
        # Codex finds its sandbox helper only with CODEX_HOME outside the temp dir
        self.tmp = work / "tmp"
        self.codex_home = work / "codex-home"
        for folder in (self.tmp, self.codex_home, self.home / ".gemini"):
            folder.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(CODEX_CONFIG)
        (self.home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
        self.model = AutoModel()
        protocol = ADAPTERS[adapter][1]
        self.twin = Twin(self._answer, protocols=(protocol,)).__enter__()

    def _answer(self, req: Request) -> Reply:
        return self.model(req)

    def close(self) -> None:
        self.twin.__exit__(None, None, None)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def env(self, project: Path, twin_url: str, bin_dir: Path) -> dict[str, str]:
        path = os.pathsep.join([str(bin_dir), str(self.claude_dir), os.environ.get("PATH", "")])
        # absolute: swell runs in the project, where a relative entry (`src`) is lost
        entries = [str(self.swell_src or ""), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
        python_path = os.pathsep.join(os.path.abspath(p) for p in entries if p)
        return {
            **os.environ,
            **_git_identity(),
            "PATH": path,
            "PYTHONPATH": python_path,
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "XDG_RUNTIME_DIR": str(self.work),
            # every CLI is pointed at the twin; only the chosen one's protocol answers
            "ANTHROPIC_BASE_URL": twin_url,
            "ANTHROPIC_API_KEY": "dummy",
            "GOOGLE_GEMINI_BASE_URL": twin_url,
            "GEMINI_API_KEY": "dummy",
            "CODEX_HOME": str(self.codex_home),
            TWIN_KEY_ENV: "sk-twin",
            "GH_TOKEN": "stand-in",
            "GITLAB_TOKEN": "stand-in",
            "GITEA_TOKEN": "stand-in",
            "SWELL_STATE_DIR": str(project / ".swell"),
        }

    def point_at_twin(self, project: Path) -> None:
        """For Codex and opencode: `adapters.NAME.options.base_url` in the project's
        wave.yaml, as a user points them at a gateway (committed, so worktrees see it);
        with `sandbox`, `runtime.sandbox` too."""
        if self.adapter not in ("codex", "opencode") and not self.sandbox:
            return
        manifest = project / "wave.yaml"
        data = yaml.safe_load(manifest.read_text())
        if self.sandbox and data.get("runtime", {}).get("sandbox") != SANDBOX:
            data.setdefault("runtime", {})["sandbox"] = SANDBOX
        if self.adapter not in ("codex", "opencode"):
            self._commit(project, manifest, data)
            return
        adapters = data.setdefault("adapters", {})
        config = adapters.setdefault(self.adapter, {"binary": ADAPTERS[self.adapter][0]})
        options = config.setdefault("options", {})
        if options.get("base_url") == f"{self.twin.url}/v1":
            self._commit(project, manifest, data)
            return
        options |= {"base_url": f"{self.twin.url}/v1", "api_key_env": TWIN_KEY_ENV}
        config.setdefault("default_model", "twin-model")  # a gateway serves its own names
        if self.adapter == "codex":  # the twin never fails: no retries to wait out
            options["config"] = {
                "model_providers.swell.request_max_retries": 0,
                "model_providers.swell.stream_max_retries": 0,
            }
        self._commit(project, manifest, data)

    def _commit(self, project: Path, manifest: Path, data: dict[str, Any]) -> None:
        """Write `data` to wave.yaml and commit it, unless it is there already."""
        text = yaml.safe_dump(data, sort_keys=False)
        if manifest.read_text() == text:
            return
        manifest.write_text(text)
        env = {**os.environ, **_git_identity()}
        for args in (["add", "wave.yaml"], ["commit", "-q", "-m", "harness: the twin"]):
            subprocess.run(["git", "-C", str(project), *args], check=True, env=env)

    def run(self, project: Path, pipeline: str, input_text: str | None = None) -> Result:
        """Run `pipeline` in `project` (after its prerequisites, in the same project)."""
        self.point_at_twin(project)
        before = [self._run(project, name, None) for name in prerequisites(project, pipeline)]
        result = self._run(project, pipeline, input_text)
        result.prerequisites = [f"{r.pipeline} ({r.status})" for r in before]
        return result

    def _run(self, project: Path, pipeline: str, input_text: str | None) -> Result:
        if input_text is None:
            input_text = INPUTS.get(pipeline) or example_input(project, pipeline)
        scratch = self.work / f"bin-{pipeline}"
        log = self.work / f"forge-{pipeline}.jsonl"
        install_standins(scratch, log)
        model = AutoModel(project_root=project, fail_first_review=self.fail_first_review)
        self.model = model
        started = time.monotonic()
        # the harness's one twin answers with this run's model
        twin = self.twin
        env = self.env(project, twin.url, scratch)
        argv = [sys.executable, "-m", "swell", "run", pipeline, "--auto-approve"]
        if self.adapter != "claude":
            argv += ["--adapter", self.adapter]
        text = input_text.replace("{twin}", twin.url)
        argv += ["--input", text, "--timeout", f"{int(self.timeout_s)}s"]
        try:
            done = subprocess.run(
                argv,
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=self.timeout_s + 120,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            exit_code: int | None = done.returncode
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            exit_code = None
            output = _text(exc.stdout) + _text(exc.stderr)
        seconds = time.monotonic() - started
        run_id = _run_id(output)
        result = Result(
            pipeline=pipeline,
            exit_code=exit_code,
            status="not started",
            first_error="",
            visits=0,
            run_id=run_id,
            seconds=seconds,
            tally=model.tally,
            missing_inputs=list(model.missing_inputs),
            tool_errors=list(model.tool_errors),
            schema_sources=list(model.schema_sources),
            forge_calls=standin_calls(log),
            output=output[-4000:],
        )
        if run_id is None:
            result.first_error = _last_line(output) or "no run id printed"
            return result
        self._read_back(project, env, result)
        return result

    def _read_back(self, project: Path, env: dict[str, str], result: Result) -> None:
        assert result.run_id
        status = self.swell_json(project, env, "status", result.run_id)
        result.status = str(status.get("status", "?")) if isinstance(status, dict) else "?"
        runs = self._run_tree(project, env, result.run_id)
        result.child_runs = len(runs) - 1
        for event in runs.get(result.run_id, []):
            if event.get("type") == "step.started":
                step = str(event.get("step_id"))
                result.visits_by_step[step] = result.visits_by_step.get(step, 0) + 1
        result.child_pipelines = [
            str(e.get("pipeline"))
            for child, events in runs.items()
            if child != result.run_id
            for e in events
            if e.get("type") == "run.started"
        ]
        result.visits = sum(
            1 for events in runs.values() for e in events if e.get("type") == "step.started"
        )
        result.first_error = first_error(runs, result.run_id) or (
            "" if result.reached_end else _last_line(result.output)
        )
        for events in runs.values():
            for event in events:
                if event.get("type") == "contract.failed":
                    result.contract_failures.append(
                        f"{event.get('step_id')}: {event.get('contract_type')} "
                        f"({event.get('policy')}): {event.get('error')}"
                    )
                if event.get("type") != "prompt.rendered":
                    continue
                where = str(event.get("step_id"))
                for text in (event.get("prompt") or "", event.get("system_prompt") or ""):
                    bad, prose = placeholders(text)
                    result.unrendered += [f"{where}: {p}" for p in bad]
                    result.prose_placeholders += [f"{where}: {p}" for p in prose]

    def _run_tree(self, project: Path, env: dict[str, str], run_id: str) -> dict[str, list[Any]]:
        """The events of the run and of every child run it started."""
        runs: dict[str, list[Any]] = {}
        queue = [run_id]
        while queue:
            current = queue.pop(0)
            if current in runs:
                continue
            events = self.swell_lines(project, env, "logs", current)
            runs[current] = events
            queue += [str(e["child_run_id"]) for e in events if e.get("type") == "child.started"]
        return runs

    def swell_json(self, project: Path, env: dict[str, str], *args: str) -> Any:
        out = self._swell(project, env, *args, "-o", "json")
        try:
            return json.loads(out)
        except ValueError:
            return {}

    def swell_lines(self, project: Path, env: dict[str, str], *args: str) -> list[Any]:
        out = self._swell(project, env, *args, "-o", "json")
        lines = []
        for line in out.splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                continue
        return lines

    def _swell(self, project: Path, env: dict[str, str], *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "swell", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return done.stdout


def agent_cli_bin() -> Path:
    base = Path(os.environ.get("SWELL_AGENT_CLIS", Path.home() / ".cache" / "swell" / "agent-clis"))
    return base / "node_modules" / ".bin"


def placeholders(text: str) -> tuple[list[str], list[str]]:
    """`{{ ... }}` left in a prompt: those naming a Wave template variable (unrendered),
    and the others (prose, examples)."""
    bad, prose = [], []
    for match in PLACEHOLDER.finditer(text):
        inner = match.group(1)
        head = re.split(r"[.\s|\[(]", inner, maxsplit=1)[0]
        named = VARIABLE.fullmatch(inner) is not None  # `{{ gate.*.text }}` is prose
        (bad if named and head in WAVE_VARIABLES else prose).append(match.group(0))
    return bad, prose


def first_error(runs: dict[str, list[Any]], run_id: str) -> str:
    """Why the run stopped: the first failed step's error, followed into the child run it
    started when that child failed; else the run's own error."""
    events = runs.get(run_id, [])
    for event in events:
        if event.get("type") != "step.finished" or event.get("outcome") != "failure":
            continue
        step = event.get("step_id")
        error = str(event.get("error") or "")
        children = [
            str(e["child_run_id"])
            for e in events
            if e.get("type") == "child.started" and e.get("step_id") == step
        ]
        for child in children:
            inner = first_error(runs, child)
            if inner:
                name = next(
                    (
                        e.get("pipeline")
                        for e in runs.get(child, [])
                        if e.get("type") == "run.started"
                    ),
                    child,
                )
                return f"{step} -> {name}: {inner}"
        return f"{step}: {error}"
    finished = [e for e in events if e.get("type") == "run.finished"]
    if finished and finished[-1].get("error"):
        return str(finished[-1]["error"])
    return ""


def _run_id(output: str) -> str | None:
    for line in output.splitlines():
        if line.startswith("run "):
            return line.split()[1]
    return None


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""
