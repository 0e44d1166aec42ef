"""What swell adds to an agent visit: `swell run` of prompt pipelines through the real
agent CLIs (claude, codex, gemini, opencode) against their instant stand-in model
servers (tests/twins/), over the same CLI invocations run directly.

Each CLI is named in wave.yaml by a shim (a few lines of sh) that records the argv,
environment, working directory and stdin swell gives it, then execs the real CLI.
After each `swell run`, every recorded invocation is run again directly, through the
same shim, one after the other: the sum is what the CLIs alone cost, and the rest of
the run's wall time is swell's (its start-up, the run, the visits' set-up and end).

For each CLI and each shape of visit (`plain`: one prompt step after another;
`review`: each step with an `agent_review` contract, whose reviewer is a second
invocation of the same CLI; `thread`: the steps share a `thread:`, so every visit
after the first resumes the CLI's session), a run of 1 step and one of 5 steps:

- the first visit: swell's cost in the 1-step run (goal, claude plain: <= 100 ms);
- each further visit: (5-step cost - 1-step cost) / 4 (goal: <= 15 ms).

The minimum over `AGENT_BENCH_ROUNDS` (default 3) rounds is judged (the machine may
be noisy); `AGENT_BENCH_CLIS` (default all installed) and `AGENT_BENCH_SHAPES`
(default plain,review,thread) narrow it. A CLI that is not installed
(scripts/install-agent-clis.sh) is skipped. Exits non-zero only when a run fails.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROUNDS = int(os.environ.get("AGENT_BENCH_ROUNDS", "3"))
SHAPES = os.environ.get("AGENT_BENCH_SHAPES", "plain,review,thread").split(",")
TESTS = Path(__file__).resolve().parents[1] / "tests"
SWELL = str(Path(sys.executable).parent / "swell")
CLIS_DIR = Path(os.environ.get("SWELL_AGENT_CLIS", Path.home() / ".cache" / "swell" / "agent-clis"))
FIRST_GOAL, FURTHER_GOAL = 0.100, 0.015
PASS = {"verdict": "pass", "issues": [], "suggestions": [], "confidence": 0.9, "summary": "Fine."}
SHIM = """#!/bin/sh
# records what swell runs, then runs it (benchmarks/agent_visit.py)
n="{log}/$(date +%s%N)-$$"
printf '%s\\0' "$@" > "$n.argv"
env -0 > "$n.env"
pwd > "$n.cwd"
cat > "$n.stdin"
exec "{real}" "$@" < "$n.stdin"
"""


class BenchError(Exception):
    pass


class NoReplay(BenchError):
    """A recorded invocation that cannot run again alone: it names a file swell made
    for the call and removed after it (codex's reviewer is given its JSON schema as a
    file). The shape is reported as not measured; swell did nothing wrong."""


@dataclass
class Cli:
    name: str
    protocol: str
    model: str
    options: Callable[[str], dict[str, Any]] = lambda url: {}
    env: Callable[[Path, str], dict[str, str]] = lambda home, url: {}
    reviews_by_tool: bool = False  # answers a JSON schema with a StructuredOutput tool call


def _claude_env(home: Path, url: str) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "dummy",
        "XDG_RUNTIME_DIR": str(home.parent),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def _codex_env(home: Path, url: str) -> dict[str, str]:
    codex_home, tmp = home.parent / "codex-home", home.parent / "tmp"
    for path in (codex_home, tmp):
        path.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        "[analytics]\nenabled = false\n\n[features]\nplugins = false\n"
    )
    return {"CODEX_HOME": str(codex_home), "TMPDIR": str(tmp), "TWIN_API_KEY": "sk-twin"}


def _gemini_env(home: Path, url: str) -> dict[str, str]:
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ide": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    return {
        "GEMINI_API_KEY": "dummy-key",
        "GOOGLE_GEMINI_BASE_URL": url,
        "TMPDIR": str(home.parent),
    }


def _opencode_env(home: Path, url: str) -> dict[str, str]:
    return {"TMPDIR": str(home.parent), "TWIN_API_KEY": "sk-twin", "npm_config_offline": "true"}


CLIS = {
    "claude": Cli(
        "claude", "anthropic", "claude-sonnet-4-5", env=_claude_env, reviews_by_tool=True
    ),
    "codex": Cli(
        "codex",
        "openai_responses",
        "gpt-5.1-codex",
        options=lambda url: {
            "base_url": f"{url}/v1",
            "api_key_env": "TWIN_API_KEY",
            "config": {
                "model_providers.swell.request_max_retries": 0,
                "model_providers.swell.stream_max_retries": 0,
            },
        },
        env=_codex_env,
    ),
    "gemini": Cli("gemini", "gemini", "gemini-2.5-pro", env=_gemini_env),
    "opencode": Cli(
        "opencode",
        "openai_chat",
        "twin-model",
        options=lambda url: {"base_url": f"{url}/v1", "api_key_env": "TWIN_API_KEY"},
        env=_opencode_env,
    ),
}


def manifest(cli: Cli, shim: Path, url: str) -> str:
    adapter = {"binary": str(shim), **({"options": cli.options(url)} if cli.options(url) else {})}
    persona = {"adapter": cli.name, "model": cli.model, "system_prompt": "Be brief."}
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "WaveManifest",
            "metadata": {"name": "visits"},
            "adapters": {cli.name: adapter},
            "personas": {"coder": persona, "critic": persona},
        }
    )


def pipeline(steps: int, shape: str) -> str:
    out = []
    for i in range(1, steps + 1):
        step: dict[str, Any] = {
            "id": f"s{i}",
            "persona": "coder",
            "exec": {"type": "prompt", "source": f"Say done ({i})."},
        }
        if i > 1:
            step["dependencies"] = [f"s{i - 1}"]
        if shape == "thread":
            step["thread"] = "t"
        if shape == "review":
            step["handover"] = {"contract": {"type": "agent_review", "reviewer": "critic"}}
        out.append(step)
    return json.dumps({"kind": "WavePipeline", "metadata": {"name": "visits"}, "steps": out})


def replies(cli: Cli) -> Callable[[Any], Any]:
    from twins.server import Reply, ToolCall

    def choose(request: Any) -> Any:
        body = json.dumps(request.body)
        # a reviewer's request carries the review's JSON schema (its fields): as JSON
        # (a tool's or an output schema) or quoted inside the prompt's text
        if not all(f'"{k}"' in body or f'\\"{k}\\"' in body for k in ("suggestions", "confidence")):
            return Reply(text="done")
        if not cli.reviews_by_tool:
            return Reply(text=json.dumps(PASS))
        if '"tool_result"' in json.dumps(request.body["messages"][-1]):
            return Reply(text="done")  # the structured answer was taken
        return Reply(tool_calls=[ToolCall("StructuredOutput", PASS)])

    return choose


@dataclass
class Invocation:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    stdin: bytes


def recorded(log: Path) -> list[Invocation]:
    found = []
    for argv_file in sorted(log.glob("*.argv"), key=lambda p: int(p.stem.split("-")[0])):
        stem = argv_file.with_suffix("")
        env = {}
        for item in Path(f"{stem}.env").read_bytes().split(b"\0"):
            key, sep, value = item.decode().partition("=")
            if sep:
                env[key] = value
        found.append(
            Invocation(
                argv=argv_file.read_bytes().decode().split("\0")[:-1],
                env=env,
                cwd=Path(f"{stem}.cwd").read_text().strip(),
                stdin=Path(f"{stem}.stdin").read_bytes(),
            )
        )
    return found


def direct(shim: Path, calls: list[Invocation]) -> float:
    """The recorded invocations run again, one after the other, through the shim."""
    total = 0.0
    for call in calls:
        start = time.perf_counter()
        done = subprocess.run(
            [str(shim), *call.argv], env=call.env, cwd=call.cwd, input=call.stdin,
            capture_output=True,
        )  # fmt: skip
        total += time.perf_counter() - start
        if done.returncode != 0:
            raise NoReplay(f"direct {call.argv[:3]} exited {done.returncode}")
    return total


@dataclass
class Case:
    root: Path
    shim: Path
    log: Path
    env: dict[str, str]
    costs: dict[int, list[float]] = field(default_factory=lambda: {1: [], 5: []})
    calls: dict[int, int] = field(default_factory=dict)


def setup(tmp: Path, cli: Cli, shape: str, real: Path, url: str) -> Case:
    root = tmp / f"{cli.name}-{shape}"
    log, home = root / "log", root / "home"
    for path in (log, home):
        path.mkdir(parents=True)
    shim = root / f"{cli.name}-shim"
    shim.write_text(SHIM.format(log=log, real=real))
    shim.chmod(0o755)
    for steps in (1, 5):
        project = root / f"p{steps}"
        (project / ".agents" / "pipelines").mkdir(parents=True)
        (project / "wave.yaml").write_text(manifest(cli, shim, url))
        (project / ".agents" / "pipelines" / "visits.yaml").write_text(pipeline(steps, shape))
    env = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "HOME")} | {
        "HOME": str(home),
        **cli.env(home, url),
    }
    return Case(root, shim, log, env)


def one_round(case: Case, steps: int) -> None:
    for old in case.log.iterdir():
        old.unlink()
    start = time.perf_counter()
    done = subprocess.run(
        [SWELL, "run", "visits"], cwd=case.root / f"p{steps}", env=case.env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise BenchError(f"swell run exited {done.returncode}: {done.stdout[-800:]}{done.stderr}")
    calls = recorded(case.log)
    case.calls[steps] = len(calls)
    case.costs[steps].append(wall - direct(case.shim, calls))


def main() -> int:
    sys.path.insert(0, str(TESTS))
    from twins.server import Twin

    wanted = os.environ.get("AGENT_BENCH_CLIS", ",".join(CLIS)).split(",")
    print(f"agent visits: swell's cost over the CLIs run directly, min of {ROUNDS} rounds")
    print(f"load {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores")
    failed = False
    with tempfile.TemporaryDirectory(prefix="swell-agent-visit-") as tmp:
        for name in wanted:
            cli, real = CLIS[name], CLIS_DIR / "node_modules" / ".bin" / name
            if not real.exists():
                print(f"  {name}: skipped ({real} not installed)")
                continue
            for shape in SHAPES:
                with Twin(replies(cli), protocols=(cli.protocol,)) as twin:
                    case = setup(Path(tmp), cli, shape, real, twin.url)
                    try:
                        one_round(case, 1)  # warm-up: caches, the project's state
                        for _ in range(ROUNDS):
                            for steps in (1, 5):
                                one_round(case, steps)
                    except NoReplay as exc:
                        print(f"  {name} {shape}: not measured (a call cannot be replayed: {exc})")
                        continue
                    except BenchError as exc:
                        print(f"  {name} {shape}: FAILED: {exc}")
                        failed = True
                        continue
                report(name, shape, case)
                shutil.rmtree(case.root, ignore_errors=True)
    return 1 if failed else 0


def report(name: str, shape: str, case: Case) -> None:
    one, five = min(case.costs[1]), min(case.costs[5])
    further = (five - one) / 4
    med = (statistics.median(case.costs[5]) - statistics.median(case.costs[1])) / 4
    calls = f"{case.calls[1]} / {case.calls[5]} CLI calls"
    print(
        f"  {name:<8} {shape:<7} first visit {one * 1e3:6.0f} ms (median "
        f"{statistics.median(case.costs[1]) * 1e3:.0f}); further {further * 1e3:5.1f} ms a "
        f"visit (median {med * 1e3:.1f}); {calls}"
    )
    # a negative cost is the machine's noise (a CLI run took longer alone than in
    # swell's run): no figure to judge, and it must not read as a pass
    noisy = " (noise: swell's cost came out negative)" if min(one, further) < 0 else ""
    if shape == "plain" and name == "claude":
        verdict = "PASS" if 0 <= one <= FIRST_GOAL and not noisy else "FAIL"
        print(
            f"  goal: first claude visit <= 100 ms over the CLI: {one * 1e3:.0f} ms{noisy}"
            f"  {verdict}"
        )
    verdict = "PASS" if 0 <= further <= FURTHER_GOAL and not noisy else "FAIL"
    print(
        f"  goal: {name} {shape}: further visits <= 15 ms: {further * 1e3:.1f} ms{noisy}  {verdict}"
    )


if __name__ == "__main__":
    sys.exit(main())
