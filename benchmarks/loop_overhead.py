"""How much does swell add to an implement -> test -> route loop of ~500 visits?

The same loop runs three ways, on the same shell commands, each in a fresh
working directory:

- swell: `swell run loop` on a generated Wave project whose pipeline has the steps
  `implement` (command), `run-tests` (command) and `gate` (conditional, routing back
  to `implement` until the tests pass): 3 visits per iteration, 167 iterations. The
  runs of one workload share that project (and its state database), as a user's runs
  do; every run gets a fresh workspace. Afterwards `swell list` / `swell status`
  must show the run succeeded with all 501 visits.
- plain: a small Python script that runs the two commands in a `while` loop with
  `subprocess.run` (stdin closed, output captured, new session, as swell does). This
  is the floor: the cost of the processes themselves, with no orchestration.
- langgraph: a LangGraph `StateGraph` with the same two nodes and a conditional edge,
  checkpointed to a file-backed SQLite database (`SqliteSaver`, `durability="sync"`
  so that, like swell, each step is committed before the next one starts).

Each implementation is a separate OS process started by this script, so each pays
its own interpreter start-up and imports: that is what a user pays for `swell run`,
and leaving it out would flatter whichever tool has the heaviest imports. The
start-up of `swell --version`, of a bare `python -c pass` and of importing
LangGraph is printed for context.

Two workloads:

- realistic: `run-tests` starts a Python interpreter (like any test runner does),
  so the loop is dominated by process start-up, as real loops are;
- overhead: `run-tests` is pure shell, which makes the orchestrator's own cost per
  visit as visible as it can be.

The machine may be small and noisy, so the implementations run interleaved in
rounds (the order rotates each round) and the median of each is reported.
`LOOP_BENCH_ROUNDS` sets the number of rounds (default 3). Absolute times are never
asserted; the script exits non-zero only when a run did not do what it should
(a failed run, a wrong number of visits or iterations).
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ITERATIONS = 167  # 3 swell visits per iteration: 501 visits
ROUNDS = int(os.environ.get("LOOP_BENCH_ROUNDS", "3"))
STARTUP_SAMPLES = 5
IMPLEMENT = "echo change >> work.txt"
PYTHON = sys.executable
SWELL = str(Path(sys.executable).parent / "swell")

PLAIN_SCRIPT = """\
import json
import subprocess
import sys


def sh(command):
    return subprocess.run(
        ["sh", "-c", command],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        start_new_session=True,
    ).returncode


implement, test = sys.argv[1], sys.argv[2]
iterations = 0
while True:
    if sh(implement) != 0:
        sys.exit("implement failed")
    iterations += 1
    if sh(test) == 0:
        break
print(json.dumps({"iterations": iterations, "passed": True}))
"""

LANGGRAPH_SCRIPT = """\
import json
import sqlite3
import subprocess
import sys
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

implement_cmd, test_cmd, db_path, recursion_limit = sys.argv[1:5]


class State(TypedDict):
    iterations: int
    passed: bool


def sh(command):
    return subprocess.run(
        ["sh", "-c", command],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        start_new_session=True,
    ).returncode


def implement(state: State) -> dict:
    if sh(implement_cmd) != 0:
        raise RuntimeError("implement failed")
    return {"iterations": state["iterations"] + 1}


def run_tests(state: State) -> dict:
    return {"passed": sh(test_cmd) == 0}


def route(state: State) -> str:
    return END if state["passed"] else "implement"


builder = StateGraph(State)
builder.add_node("implement", implement)
builder.add_node("run_tests", run_tests)
builder.add_edge(START, "implement")
builder.add_edge("implement", "run_tests")
builder.add_conditional_edges("run_tests", route, ["implement", END])
conn = sqlite3.connect(db_path, check_same_thread=False)
graph = builder.compile(checkpointer=SqliteSaver(conn))
config = {"configurable": {"thread_id": "loop"}, "recursion_limit": int(recursion_limit)}
final = graph.invoke({"iterations": 0, "passed": False}, config, durability="sync")
conn.close()
print(json.dumps({"iterations": final["iterations"], "passed": final["passed"]}))
"""


class BenchError(Exception):
    """Something did not run correctly; the numbers would mean nothing."""


@dataclass(frozen=True)
class Workload:
    name: str
    iterations: int
    test: str  # exits 0 once work.txt has `iterations` lines

    @property
    def visits(self) -> int:
        return 3 * self.iterations


def python_test(iterations: int) -> str:
    # the venv's interpreter by absolute path: `python3` on PATH may be a slow shim
    code = f"import sys; n=sum(1 for _ in open('work.txt')); sys.exit(0 if n>={iterations} else 1)"
    return f'{shlex.quote(PYTHON)} -c "{code}"'  # the code holds no ", $ or `


def shell_test(iterations: int) -> str:
    return f"test $(grep -c . work.txt) -ge {iterations}"


# ------------------------------------------------------------------ processes


def run_checked(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a process to completion; its stdout, or BenchError with its stderr."""
    proc = subprocess.run(
        list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
        raise BenchError(f"{shlex.join(argv)} (in {cwd}) exited {proc.returncode}:\n{tail}")
    return proc.stdout


def timed(action: Callable[[], str]) -> tuple[float, str]:
    start = time.perf_counter()
    out = action()
    return time.perf_counter() - start, out


def count_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


def check_work(work_file: Path, workload: Workload, who: str) -> None:
    lines = count_lines(work_file)
    if lines != workload.iterations:
        raise BenchError(f"{who}: {work_file} has {lines} lines, expected {workload.iterations}")


def check_result(stdout: str, workload: Workload, who: str) -> None:
    result = json.loads(stdout.strip().splitlines()[-1])
    if result != {"iterations": workload.iterations, "passed": True}:
        raise BenchError(
            f"{who}: finished with {result}, expected {workload.iterations} iterations"
        )


# ---------------------------------------------------------------------- swell


def swell_env() -> dict[str, str]:
    """The caller's environment, minus anything that moves swell's state elsewhere."""
    return {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}


def write_project(root: Path, workload: Workload) -> None:
    """A Wave project whose `loop` pipeline is implement -> run-tests -> gate."""
    limit = workload.iterations + 10
    manifest = {
        "apiVersion": "v1",
        "kind": "WaveManifest",
        "metadata": {"name": f"loop-bench-{workload.name}"},
        # the failing tests fail the same way every time: do not trip the breaker
        "runtime": {"circuit_breaker": {"limit": 100000}},
    }
    pipeline = {
        "kind": "WavePipeline",
        "metadata": {"name": "loop"},
        "max_step_visits": workload.visits + 30,
        "steps": [
            {"id": "implement", "type": "command", "max_visits": limit, "script": IMPLEMENT},
            {
                "id": "run-tests",
                "type": "command",
                "dependencies": ["implement"],
                "max_visits": limit,
                "script": workload.test,
            },
            {
                "id": "gate",
                "type": "conditional",
                "dependencies": ["run-tests"],
                "max_visits": limit,
                "edges": [
                    {"target": "_complete", "condition": "outcome=success"},
                    {"target": "implement"},
                ],
            },
        ],
    }
    pipelines = root / ".agents" / "pipelines"
    pipelines.mkdir(parents=True)
    (root / "wave.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (pipelines / "loop.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))


def verify_swell_run(project: Path, workload: Workload, run_output: str) -> None:
    env = swell_env()
    runs = json.loads(run_checked([SWELL, "list", "-o", "json"], project, env))
    if not runs:
        raise BenchError(f"swell: `swell list` shows no runs in {project}")
    run_id = runs[0]["id"]
    if f"run {run_id}" not in run_output.splitlines()[:1]:
        raise BenchError(f"swell: newest run {run_id} is not the one just started")
    status = json.loads(run_checked([SWELL, "status", run_id, "-o", "json"], project, env))
    if status["status"] != "succeeded" or status["visits"] != workload.visits:
        raise BenchError(
            f"swell: run {run_id} is {status['status']} with {status['visits']} visits, "
            f"expected succeeded with {workload.visits} (error: {status.get('error')})"
        )
    check_work(Path(status["workspace"]) / "work.txt", workload, "swell")


def run_swell(workload: Workload, project: Path) -> float:
    """One `swell run loop`; its project is shared by the workload's runs, its workspace is new."""
    seconds, out = timed(lambda: run_checked([SWELL, "run", "loop"], project, swell_env()))
    verify_swell_run(project, workload, out)
    return seconds


# ------------------------------------------------------------ plain, langgraph


def run_plain(workload: Workload, scripts: Path, scratch: Path) -> float:
    work = scratch / "work"
    work.mkdir(parents=True)
    argv = [PYTHON, str(scripts / "plain_loop.py"), IMPLEMENT, workload.test]
    seconds, out = timed(lambda: run_checked(argv, work))
    check_result(out, workload, "plain")
    check_work(work / "work.txt", workload, "plain")
    return seconds


def run_langgraph(workload: Workload, scripts: Path, scratch: Path) -> float:
    work = scratch / "work"
    work.mkdir(parents=True)
    db = scratch / "checkpoints.sqlite"
    limit = str(4 * workload.visits)  # 2 supersteps per iteration; plenty of room
    argv = [PYTHON, str(scripts / "langgraph_loop.py"), IMPLEMENT, workload.test, str(db), limit]
    seconds, out = timed(lambda: run_checked(argv, work))
    check_result(out, workload, "langgraph")
    check_work(work / "work.txt", workload, "langgraph")
    return seconds


# ------------------------------------------------------------------ the bench


@dataclass
class Bench:
    root: Path
    scripts: Path
    projects: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, workloads: Sequence[Workload]) -> Bench:
        scripts = root / "scripts"
        scripts.mkdir()
        (scripts / "plain_loop.py").write_text(PLAIN_SCRIPT)
        (scripts / "langgraph_loop.py").write_text(LANGGRAPH_SCRIPT)
        bench = cls(root, scripts)
        for workload in workloads:
            project = root / "projects" / workload.name
            write_project(project, workload)
            bench.projects[workload.name] = project
        return bench

    def runners(self, workload: Workload) -> dict[str, Callable[[Path], float]]:
        project = self.projects[workload.name]
        return {
            "swell": lambda _scratch: run_swell(workload, project),
            "plain": lambda scratch: run_plain(workload, self.scripts, scratch),
            "langgraph": lambda scratch: run_langgraph(workload, self.scripts, scratch),
        }

    def measure(self, workload: Workload, rounds: int) -> dict[str, list[float]]:
        runners = self.runners(workload)
        names = list(runners)
        times: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            cells = []
            for name in order:
                scratch = self.root / "scratch" / f"{workload.name}-{name}-{r}"
                times[name].append(runners[name](scratch))
                cells.append(f"{name} {times[name][-1]:6.2f}s")
            print(f"  round {r + 1}: " + "   ".join(cells), flush=True)
        return times


def startup_costs() -> dict[str, float]:
    here = Path.cwd()
    commands = {
        "swell --version": [SWELL, "--version"],
        "python -c pass": [PYTHON, "-c", "pass"],
        "python -c 'import langgraph + SqliteSaver'": [
            PYTHON,
            "-c",
            "import langgraph.graph, langgraph.checkpoint.sqlite",
        ],
    }
    return {label: median_seconds(argv, here) for label, argv in commands.items()}


def median_seconds(argv: Sequence[str], cwd: Path) -> float:
    return statistics.median(
        timed(lambda: run_checked(argv, cwd))[0] for _ in range(STARTUP_SAMPLES)
    )


@dataclass(frozen=True)
class Result:
    workload: Workload
    swell: float
    plain: float
    langgraph: float

    @property
    def per_visit_ms(self) -> float:
        return (self.swell - self.plain) / self.workload.visits * 1000


def report(result: Result) -> None:
    print(
        f"  median: swell {result.swell:.2f}s   plain {result.plain:.2f}s   "
        f"langgraph {result.langgraph:.2f}s"
    )
    print(
        f"  swell/plain {result.swell / result.plain:.2f}x   "
        f"langgraph/plain {result.langgraph / result.plain:.2f}x   "
        f"swell overhead {result.per_visit_ms:.2f} ms/visit"
    )


def summary(results: Sequence[Result]) -> None:
    print("\nsummary (median wall time per run, each a fresh process)")
    header = (
        f"{'workload':<10} {'visits':>6} {'swell':>8} {'plain':>8} {'langgraph':>10} "
        f"{'swell/plain':>12} {'lg/plain':>9} {'swell ms/visit':>15}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.workload.name:<10} {r.workload.visits:>6} {r.swell:>7.2f}s {r.plain:>7.2f}s "
            f"{r.langgraph:>9.2f}s {r.swell / r.plain:>11.2f}x {r.langgraph / r.plain:>8.2f}x "
            f"{r.per_visit_ms:>15.2f}"
        )


def main() -> int:
    if ROUNDS < 1:
        print("LOOP_BENCH_ROUNDS must be at least 1", file=sys.stderr)
        return 2
    workloads = [
        Workload("realistic", ITERATIONS, python_test(ITERATIONS)),
        Workload("overhead", ITERATIONS, shell_test(ITERATIONS)),
    ]
    warmup = Workload("warmup", 2, shell_test(2))
    print(f"loop benchmark: {ITERATIONS} iterations, {ROUNDS} rounds, python {PYTHON}")
    try:
        with tempfile.TemporaryDirectory(prefix="swell-loop-bench-") as tmp:
            bench = Bench.create(Path(tmp), [*workloads, warmup])
            print("warm-up (not reported):")
            bench.measure(warmup, 1)  # warms caches and bytecode
            print("\nstart-up (median of 5):")
            for label, seconds in startup_costs().items():
                print(f"  {label:<45} {seconds * 1000:7.1f} ms")
            results: list[Result] = []
            for workload in workloads:
                print(f"\nworkload {workload.name}: run-tests is `{workload.test}`")
                times = bench.measure(workload, ROUNDS)
                med = {name: statistics.median(samples) for name, samples in times.items()}
                results.append(Result(workload, med["swell"], med["plain"], med["langgraph"]))
                report(results[-1])
            summary(results)
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
