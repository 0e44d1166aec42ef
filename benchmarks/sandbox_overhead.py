"""What does the sandbox (runtime.sandbox, bubblewrap) cost a visit?

The same command loop as benchmarks/loop_overhead.py (implement -> run-tests -> gate,
3 visits per iteration, 2 of them start a process) runs through `swell run` in two
projects that differ only in `runtime.sandbox.enabled`. They run interleaved in rounds
(the order alternates), in the same process of this script, so the ratio compares like
with like on a noisy machine. Printed: the minimum and median of each, the ratio of the
minimums (sandboxed / not) and the added cost per process-starting visit, whose goal is
at most 15 ms. `SANDBOX_BENCH_ITERATIONS` (default 1000: 3,000 visits) and
`SANDBOX_BENCH_ROUNDS` (default 3) change the size. Exits non-zero only when a run did
not succeed with every visit; a missed goal prints FAIL.

Then, when the claude CLI is installed (tests/agent_clis.py), prompt pipelines through the
real claude CLI against its stand-in model server (tests/twins/), sandboxed and not,
`SANDBOX_BENCH_CLAUDE_ROUNDS` (default 5) runs each, interleaved: a run of one visit
(whose box is started for it) and a run of `SANDBOX_BENCH_CLAUDE_CHAIN` (default 4)
visits in a chain (the box started once). Printed: the ratio and the added cost per
agent visit (the run's box, the egress proxy and the visit's forwarder, the run's home),
PASS or FAIL against the same goal. Then the same through a stand-in claude CLI (a shell
script that reaches its model's host with curl and answers), `SANDBOX_BENCH_STAND_IN_CHAIN`
(default 40) visits a run: the sandbox's cost of an agent visit without node's seconds of
start-up noise around it. `SANDBOX_BENCH_CLAUDE_ROUNDS=0` skips these,
`SANDBOX_BENCH_ITERATIONS=0` the command loop, `SANDBOX_BENCH_CLAUDE_CHAIN=0` and
`SANDBOX_BENCH_STAND_IN_CHAIN=0` those rows. With `SWELL_BASELINE_SRC` (another swell's
`src`), each agent row also runs that code, interleaved with this one, and prints both.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ITERATIONS = int(os.environ.get("SANDBOX_BENCH_ITERATIONS", "1000"))
CLAUDE_ROUNDS = int(os.environ.get("SANDBOX_BENCH_CLAUDE_ROUNDS", "5"))
CLAUDE_CHAIN = int(os.environ.get("SANDBOX_BENCH_CLAUDE_CHAIN", "4"))
STAND_IN_CHAIN = int(os.environ.get("SANDBOX_BENCH_STAND_IN_CHAIN", "40"))
# reaches the model's host (through the sandbox's proxy when sandboxed) and answers
STAND_IN = """#!/bin/sh
curl -s -o /dev/null "$ANTHROPIC_BASE_URL/v1/models"
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'
"""
TESTS = Path(__file__).resolve().parent.parent / "tests"
ROUNDS = int(os.environ.get("SANDBOX_BENCH_ROUNDS", "3"))
GOAL_MS = 15.0  # added per visit that starts a process
BASELINE = os.environ.get("SWELL_BASELINE_SRC")  # the code to compare with, if any


def write_project(root: Path, sandboxed: bool) -> None:
    limit = ITERATIONS + 10
    runtime: dict[str, object] = {"circuit_breaker": {"limit": 100000}}
    if sandboxed:
        runtime["sandbox"] = {"enabled": True}
    manifest = {"kind": "WaveManifest", "metadata": {"name": "sbx-bench"}, "runtime": runtime}
    pipeline = {
        "kind": "WavePipeline",
        "metadata": {"name": "loop"},
        "max_step_visits": 3 * ITERATIONS + 30,
        "steps": [
            {"id": "implement", "type": "command", "max_visits": limit,
             "script": "echo change >> work.txt"},
            {"id": "run-tests", "type": "command", "dependencies": ["implement"],
             "max_visits": limit, "script": f"test $(grep -c . work.txt) -ge {ITERATIONS}"},
            {"id": "gate", "type": "conditional", "dependencies": ["run-tests"],
             "max_visits": limit,
             "edges": [{"target": "_complete", "condition": "outcome=success"},
                       {"target": "implement"}]},
        ],
    }  # fmt: skip
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (root / ".agents" / "pipelines" / "loop.yaml").write_text(yaml.safe_dump(pipeline))


def swell(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "SWELL_STORE")}
    done = subprocess.run(
        [sys.executable, "-m", "swell", *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
    )
    if done.returncode != 0:
        sys.exit(f"swell {' '.join(args)} in {project} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def one_run(project: Path) -> float:
    started = time.perf_counter()
    out = swell(project, "run", "loop")
    took = time.perf_counter() - started
    run_id = out.splitlines()[0].removeprefix("run ")
    status = json.loads(swell(project, "status", run_id, "-o", "json"))
    if status["status"] != "succeeded" or status["visits"] != 3 * ITERATIONS:
        sys.exit(f"{project}: run {run_id} {status['status']}, {status['visits']} visits")
    return took


def claude_project(root: Path, binary: Path, sandboxed: bool, visits: int) -> None:
    runtime = {"sandbox": {"enabled": True}} if sandboxed else {}
    manifest = {
        "kind": "WaveManifest",
        "metadata": {"name": "sbx-claude"},
        "runtime": runtime,
        "adapters": {"claude": {"binary": str(binary)}},
        "personas": {"coder": {"adapter": "claude", "model": "claude-sonnet-4-5"}},
    }
    steps: list[dict[str, object]] = []
    for n in range(visits):  # a chain: one visit after the other
        step: dict[str, object] = {
            "id": f"ask{n}", "persona": "coder", "exec": {"type": "prompt", "source": "say done"},
        }  # fmt: skip
        if n:
            step["dependencies"] = [f"ask{n - 1}"]
        steps.append(step)
    pipeline = {"kind": "WavePipeline", "metadata": {"name": "ask"}, "steps": steps}
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (root / ".agents" / "pipelines" / "ask.yaml").write_text(yaml.safe_dump(pipeline))


def claude_visits(tmp: Path) -> None:
    """The added cost of a claude visit (see the module's docstring): a run of one visit
    (the run's box is started for it) and a run of CLAUDE_CHAIN visits (the box started
    once, each visit then a process in it)."""
    sys.path.insert(0, str(TESTS))
    from agent_clis import cli_dir
    from twins.server import Reply, Twin

    binary = cli_dir() / "node_modules" / ".bin" / "claude"
    if CLAUDE_ROUNDS <= 0 or not binary.exists():
        print(f"claude visit: skipped ({binary} not installed, or no rounds)")
        return
    home = tmp / "home"
    home.mkdir()
    with Twin(lambda request: Reply(text="done"), protocols=("anthropic",)) as twin:
        env = {"HOME": str(home), "ANTHROPIC_BASE_URL": twin.url, "ANTHROPIC_API_KEY": "dummy"}
        for visits in (1, CLAUDE_CHAIN) if CLAUDE_CHAIN > 1 else (1,):
            claude_row(tmp / f"chain{visits}", binary, env, visits)
        if STAND_IN_CHAIN <= 0:
            return
        # the same visits through a stand-in CLI that only reaches its model's host and
        # answers: what the sandbox adds to an agent visit, without node's start (seconds,
        # noisy under load) hiding it
        stand_in = tmp / "bin" / "claude"
        stand_in.parent.mkdir()
        stand_in.write_text(STAND_IN)
        stand_in.chmod(0o755)
        claude_row(tmp / "stand-in", stand_in, env, STAND_IN_CHAIN, "a stand-in claude CLI")


def claude_row(
    tmp: Path, binary: Path, env: dict[str, str], visits: int, cli: str = "real claude CLI"
) -> None:
    projects = {"plain": tmp / "plain", "sandboxed": tmp / "sandboxed"}
    for name, root in projects.items():
        root.mkdir(parents=True)
        claude_project(root, binary, name == "sandboxed", visits)
    codes = {"": env, **({"baseline ": {**env, "PYTHONPATH": BASELINE}} if BASELINE else {})}
    combos = [(code, name) for code in codes for name in projects]
    times: dict[tuple[str, str], list[float]] = {combo: [] for combo in combos}
    for round_ in range(CLAUDE_ROUNDS + 1):  # the first round warms the caches
        for code, name in combos if round_ % 2 == 0 else list(reversed(combos)):
            started = time.perf_counter()
            swell(projects[name], "run", "ask", env=codes[code])
            if round_:
                times[code, name].append(time.perf_counter() - started)
    print(
        f"claude visits (a run of {visits} prompt step(s), {cli} against its twin),"
        f" {CLAUDE_ROUNDS} rounds, load {os.getloadavg()[0]:.1f}"
    )
    for code in codes:
        for name in projects:
            found = times[code, name]
            print(
                f"  {code + name:<19} min {1000 * min(found):7.0f} ms"
                f"  median {1000 * statistics.median(found):7.0f} ms"
            )
        plain, boxed = times[code, "plain"], times[code, "sandboxed"]
        added = 1000 * (min(boxed) - min(plain)) / visits
        median = 1000 * (statistics.median(boxed) - statistics.median(plain)) / visits
        verdict = "PASS" if added <= GOAL_MS else "FAIL"
        print(
            f"  {code}sandboxed / plain: {min(boxed) / min(plain):.3f}x; added per agent visit:"
            f" {added:.0f} ms (min), {median:.0f} ms (median) (goal <= {GOAL_MS:g} ms) {verdict}"
        )


def main() -> None:
    if ITERATIONS > 0:
        command_loop()
    with tempfile.TemporaryDirectory(prefix="swell-sbx-claude-") as tmp:
        claude_visits(Path(tmp))


def command_loop() -> None:
    with tempfile.TemporaryDirectory(prefix="swell-sbx-bench-") as tmp:
        projects = {"plain": Path(tmp) / "plain", "sandboxed": Path(tmp) / "sandboxed"}
        for name, root in projects.items():
            root.mkdir()
            write_project(root, name == "sandboxed")
        times: dict[str, list[float]] = {name: [] for name in projects}
        for round_ in range(ROUNDS):
            order = list(projects) if round_ % 2 == 0 else list(reversed(projects))
            for name in order:
                times[name].append(one_run(projects[name]))
    visits, spawning = 3 * ITERATIONS, 2 * ITERATIONS
    print(f"{ITERATIONS} iterations ({visits} visits, {spawning} start a process), {ROUNDS} rounds")
    for name, found in times.items():
        print(
            f"  {name:<10} min {min(found):7.2f}s  median {statistics.median(found):7.2f}s"
            f"  ({1000 * min(found) / visits:.2f} ms a visit)"
        )
    ratio = min(times["sandboxed"]) / min(times["plain"])
    added = 1000 * (min(times["sandboxed"]) - min(times["plain"])) / spawning
    verdict = "PASS" if added <= GOAL_MS else "FAIL"
    print(f"  sandboxed / plain: {ratio:.2f}x (minimums)")
    print(f"  added per process-starting visit: {added:.2f} ms (goal <= {GOAL_MS:g} ms) {verdict}")


if __name__ == "__main__":
    main()
