"""How much does swell add to an implement -> test -> route loop?

The same loop runs three ways, on the same shell commands, each in a fresh
working directory:

- swell: `swell run loop` on a generated Wave project whose pipeline has the steps
  `implement` (command), `run-tests` (command) and `gate` (conditional, routing back
  to `implement` until the tests pass): 3 visits per iteration. Every event is
  committed to the state database before the next visit starts (that is how swell
  always runs). The runs of one workload share that project (and its state
  database), as a user's runs do; every run gets a fresh workspace. Afterwards
  `swell list` / `swell status` must show the run succeeded with every visit.
- plain: a small Python script that runs the two commands in a `while` loop with
  `subprocess.run` (stdin closed, output captured, new session, as swell does). This
  is the floor: the cost of the processes themselves, with no orchestration.
- langgraph: a LangGraph `StateGraph` with the same two nodes and a conditional edge,
  checkpointed to a file-backed SQLite database (`SqliteSaver`, `durability="sync"`
  so that, like swell, each step is committed before the next one starts), as it
  ships: WAL at SQLite's default `synchronous=FULL`, every commit fsynced.
- langgraph@normal: the same at swell's durability, `synchronous=NORMAL` (a killed
  process loses no committed step; a power cut may lose the last ones). This is the
  like-for-like comparison.

Before the rounds, each tool runs the loop once more at two small sizes with every
SQLite connection traced, and the commits per iteration (the difference between the
two, so set-up and finish do not count) are printed beside the times: equal
durability is about what each commit costs, and how many commits a tool makes.

Each implementation is a separate OS process started by this script, so each pays
its own interpreter start-up and imports: that is what a user pays for `swell run`,
and leaving it out would flatter whichever tool has the heaviest imports.

Two workloads:

- durable: 1,000 iterations (3,000 visits); `run-tests` is a shell `test` of a count
  (`grep -c`), so the orchestrator's own cost per visit is as visible as it can be.
  The goal: swell at most 1.2x the plain loop.
- realistic: 167 iterations (501 visits); `run-tests` starts a Python interpreter
  (like any test runner does), so the loop is dominated by process start-up, as
  real loops are.

The machine may be small and noisy, so the implementations run interleaved in
rounds (shuffled each round: a rotation keeps each one's predecessor, and a run that
leaves much for the disk to write back slows the one after it, so each run also
starts after an `os.sync()`); the minimum and the median of each are
reported, and the ratios are taken between minimums (and between medians).
`LOOP_BENCH_ROUNDS` sets the number of rounds (default 5). `SWELL_BASELINE_SRC`,
the `src/` directory of another checkout (e.g. a `git worktree` of an older
commit), adds that swell as `swell@base`, measured in the same rounds. Absolute
times are never asserted; the script exits non-zero only when a run did not do
what it should (a failed run, a wrong number of visits or iterations). A goal that
is missed prints FAIL but does not change the exit code.
"""

from __future__ import annotations

import json
import os
import random
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

ROUNDS = int(os.environ.get("LOOP_BENCH_ROUNDS", "5"))
BASELINE_SRC = os.environ.get("SWELL_BASELINE_SRC")
GOAL = 1.2  # durable: swell / plain, minimum of the rounds
IMPLEMENT = "echo change >> work.txt"
PYTHON = sys.executable
SWELL = str(Path(sys.executable).parent / "swell")
# `python -c BOOT SRC ARGS...` runs the swell found in SRC, as the console script would
BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'swell'; "
    "from swell.cli.app import main; main()"
)

# how every baseline starts a process, as swell does: stdin closed, output captured,
# a new session
SH_FUNCTION = """
def sh(command):
    return subprocess.run(
        ["sh", "-c", command],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        start_new_session=True,
    ).returncode
"""

PLAIN_SCRIPT = (
    "import json\nimport subprocess\nimport sys\n\n"
    + SH_FUNCTION
    + """

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
)

LANGGRAPH_SCRIPT = (
    """\
import json
import sqlite3
import subprocess
import sys
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

implement_cmd, test_cmd, db_path, recursion_limit, synchronous = sys.argv[1:6]


class State(TypedDict):
    iterations: int
    passed: bool

"""
    + SH_FUNCTION
    + """

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
if synchronous != "shipped":
    conn.execute(f"PRAGMA synchronous={synchronous}")
graph = builder.compile(checkpointer=SqliteSaver(conn))
config = {"configurable": {"thread_id": "loop"}, "recursion_limit": int(recursion_limit)}
final = graph.invoke({"iterations": 0, "passed": False}, config, durability="sync")
conn.close()
print(json.dumps({"iterations": final["iterations"], "passed": final["passed"]}))
"""
)


# `python COUNT_COMMITS OUT TARGET ARGS...` runs TARGET (a script, or swell's BOOT when
# TARGET is "-c") with every SQLite connection traced, and writes its COMMIT count to OUT
COUNT_COMMITS_SCRIPT = """\
import atexit
import runpy
import sqlite3
import sys

commits = [0]
_connect = sqlite3.connect


def count(sql):
    if sql.lstrip().upper().startswith(("COMMIT", "END")):
        commits[0] += 1


def connect(*args, **kwargs):
    conn = _connect(*args, **kwargs)
    conn.set_trace_callback(count)
    return conn


sqlite3.connect = connect
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(str(commits[0])))
if sys.argv[1] == "-c":
    code = sys.argv.pop(2)
    sys.argv.pop(1)
    exec(compile(code, "<boot>", "exec"), {"__name__": "__main__"})
else:
    sys.argv.pop(0)
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


class BenchError(Exception):
    """Something did not run correctly; the numbers would mean nothing."""


@dataclass(frozen=True)
class Workload:
    name: str
    iterations: int
    test: str  # exits 0 once work.txt has `iterations` lines
    goal: float | None = None  # swell / plain at most this (minimums)

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


@dataclass(frozen=True)
class Swell:
    """One swell to measure: this checkout's, or a baseline's src/ directory."""

    name: str
    argv: tuple[str, ...]  # what runs `swell`

    @classmethod
    def installed(cls) -> Swell:
        return cls("swell", (SWELL,))

    @classmethod
    def from_src(cls, name: str, src: str) -> Swell:
        return cls(name, (PYTHON, "-c", BOOT, str(Path(src).resolve())))

    def __call__(self, *args: str, cwd: Path) -> str:
        env = {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}
        return run_checked([*self.argv, *args], cwd, env)


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


def verify_swell_run(swell: Swell, project: Path, workload: Workload, run_output: str) -> None:
    runs = json.loads(swell("list", "-o", "json", cwd=project))
    if not runs:
        raise BenchError(f"{swell.name}: `swell list` shows no runs in {project}")
    run_id = runs[0]["id"]
    if f"run {run_id}" not in run_output.splitlines()[:1]:
        raise BenchError(f"{swell.name}: newest run {run_id} is not the one just started")
    status = json.loads(swell("status", run_id, "-o", "json", cwd=project))
    if status["status"] != "succeeded" or status["visits"] != workload.visits:
        raise BenchError(
            f"{swell.name}: run {run_id} is {status['status']} with {status['visits']} visits, "
            f"expected succeeded with {workload.visits} (error: {status.get('error')})"
        )
    check_work(Path(status["workspace"]) / "work.txt", workload, swell.name)


def run_swell(swell: Swell, workload: Workload, project: Path) -> float:
    """One `swell run loop`; its project is shared by the workload's runs, its workspace is new."""
    seconds, out = timed(lambda: swell("run", "loop", cwd=project))
    verify_swell_run(swell, project, workload, out)
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


def langgraph_argv(workload: Workload, scripts: Path, db: Path, synchronous: str) -> list[str]:
    limit = str(4 * workload.visits)  # 2 supersteps per iteration; plenty of room
    script = str(scripts / "langgraph_loop.py")
    return [PYTHON, script, IMPLEMENT, workload.test, str(db), limit, synchronous]


def run_langgraph(workload: Workload, scripts: Path, scratch: Path, synchronous: str) -> float:
    work = scratch / "work"
    work.mkdir(parents=True)
    argv = langgraph_argv(workload, scripts, scratch / "checkpoints.sqlite", synchronous)
    seconds, out = timed(lambda: run_checked(argv, work))
    check_result(out, workload, "langgraph")
    check_work(work / "work.txt", workload, "langgraph")
    return seconds


# ------------------------------------------------------------ commits per iteration


def count_commits(argv: Sequence[str], cwd: Path, scripts: Path) -> int:
    """COMMITs made by `argv` (a python command line), every SQLite connection traced."""
    out = cwd / "commits.txt"
    python, *rest = argv
    run_checked([python, str(scripts / "count_commits.py"), str(out), *rest], cwd)
    return int(out.read_text())


def commits_per_iteration(bench: Bench, root: Path) -> dict[str, float]:
    """Each tool's commits per loop iteration: the difference between 10 and 20 iterations."""
    counts: dict[str, list[int]] = {}
    for size in (10, 20):
        workload = Workload(f"count{size}", size, shell_test(size))
        swell_project = root / "count" / f"project{size}"
        write_project(swell_project, workload)
        swell = Swell.from_src("swell", str(Path(__file__).resolve().parents[1] / "src"))
        runs = {
            "swell": ([*swell.argv, "run", "loop"], swell_project),
            "langgraph": (
                langgraph_argv(workload, bench.scripts, root / "count" / f"lg{size}.db", "shipped"),
                root / "count" / f"lg{size}",
            ),
        }
        for name, (argv, cwd) in runs.items():
            cwd.mkdir(parents=True, exist_ok=True)
            counts.setdefault(name, []).append(count_commits(argv, cwd, bench.scripts))
    return {name: (c20 - c10) / 10 for name, (c10, c20) in counts.items()}


# ------------------------------------------------------------------ the bench


@dataclass
class Bench:
    root: Path
    scripts: Path
    swells: list[Swell]
    projects: dict[tuple[str, str], Path] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, swells: list[Swell], workloads: Sequence[Workload]) -> Bench:
        scripts = root / "scripts"
        scripts.mkdir()
        (scripts / "plain_loop.py").write_text(PLAIN_SCRIPT)
        (scripts / "langgraph_loop.py").write_text(LANGGRAPH_SCRIPT)
        (scripts / "count_commits.py").write_text(COUNT_COMMITS_SCRIPT)
        bench = cls(root, scripts, swells)
        for workload in workloads:
            for swell in swells:  # each its own state database: schemas may differ
                project = root / "projects" / f"{workload.name}-{swell.name}"
                write_project(project, workload)
                bench.projects[workload.name, swell.name] = project
        return bench

    def runners(self, workload: Workload) -> dict[str, Callable[[Path], float]]:
        def swell_runner(swell: Swell) -> Callable[[Path], float]:
            project = self.projects[workload.name, swell.name]
            return lambda _scratch: run_swell(swell, workload, project)

        runners = {swell.name: swell_runner(swell) for swell in self.swells}
        runners["plain"] = lambda scratch: run_plain(workload, self.scripts, scratch)
        runners["langgraph"] = lambda scratch: run_langgraph(
            workload, self.scripts, scratch, "shipped"
        )
        runners["lg@normal"] = lambda scratch: run_langgraph(
            workload, self.scripts, scratch, "NORMAL"
        )
        return runners

    def measure(self, workload: Workload, rounds: int) -> dict[str, list[float]]:
        runners = self.runners(workload)
        names = list(runners)
        times: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            order = names[:]
            random.Random(r).shuffle(order)
            cells = []
            for name in order:
                scratch = self.root / "scratch" / f"{workload.name}-{name}-{r}"
                os.sync()  # the last run's writeback must not slow this one
                times[name].append(runners[name](scratch))
                cells.append(f"{name} {times[name][-1]:6.2f}s")
            print(f"  round {r + 1}: " + "   ".join(cells), flush=True)
        return times


@dataclass(frozen=True)
class Result:
    workload: Workload
    times: dict[str, list[float]]

    def best(self, name: str) -> float:
        return min(self.times[name])

    def median(self, name: str) -> float:
        return statistics.median(self.times[name])

    def tools(self) -> list[str]:
        return [n for n in self.times if n != "plain"]

    def per_visit_ms(self, name: str) -> float:
        return (self.best(name) - self.best("plain")) / self.workload.visits * 1000


def report(result: Result) -> None:
    plain_min, plain_med = result.best("plain"), result.median("plain")
    print(
        f"  {'':<11} {'min':>8} {'median':>8} {'min/plain':>10} {'med/plain':>10} {'ms/visit':>9}"
    )
    for name in ["plain", *result.tools()]:
        best, med = result.best(name), result.median(name)
        extra = "" if name == "plain" else f"{result.per_visit_ms(name):9.3f}"
        print(
            f"  {name:<11} {best:7.2f}s {med:7.2f}s {best / plain_min:9.2f}x "
            f"{med / plain_med:9.2f}x {extra}"
        )
    goal = result.workload.goal
    if goal is not None:
        ratio = result.best("swell") / plain_min
        verdict = "PASS" if ratio <= goal else "FAIL"
        print(
            f"  goal: swell <= {goal:.2f}x plain (min of {len(result.times['plain'])}): "
            f"{ratio:.2f}x  {verdict}"
        )


def summary(results: Sequence[Result]) -> None:
    print("\nsummary (minimum wall time per run over the rounds, each a fresh process)")
    names = results[0].tools()
    header = f"{'workload':<11} {'visits':>6} {'plain':>8} " + " ".join(
        f"{n:>10} {n[:8] + '/plain':>14}" for n in names
    )
    print(header)
    print("-" * len(header))
    for r in results:
        cells = " ".join(f"{r.best(n):>9.2f}s {r.best(n) / r.best('plain'):>13.2f}x" for n in names)
        print(f"{r.workload.name:<11} {r.workload.visits:>6} {r.best('plain'):>7.2f}s {cells}")


def main() -> int:
    if ROUNDS < 1:
        print("LOOP_BENCH_ROUNDS must be at least 1", file=sys.stderr)
        return 2
    workloads = [
        Workload("durable", 1000, shell_test(1000), goal=GOAL),
        Workload("realistic", 167, python_test(167)),
    ]
    warmup = Workload("warmup", 2, shell_test(2))
    swells = [Swell.installed()]
    if BASELINE_SRC:
        swells.append(Swell.from_src("swell@base", BASELINE_SRC))
    print(f"loop benchmark: {ROUNDS} rounds, python {PYTHON}")
    if BASELINE_SRC:
        print(f"swell@base: {BASELINE_SRC}")
    try:
        with tempfile.TemporaryDirectory(prefix="swell-loop-bench-") as tmp:
            bench = Bench.create(Path(tmp), swells, [*workloads, warmup])
            print("warm-up (not reported):")
            bench.measure(warmup, 1)  # warms caches
            commits = commits_per_iteration(bench, Path(tmp))
            print(
                "\nSQLite commits per iteration (3 visits), every connection traced: "
                + ", ".join(f"{name} {n:g}" for name, n in commits.items())
                + "\n(langgraph and lg@normal commit alike; lg@normal skips the fsync "
                "of each commit, as swell's synchronous=NORMAL does)"
            )
            results: list[Result] = []
            for workload in workloads:
                print(
                    f"\nworkload {workload.name}: {workload.visits} visits, "
                    f"run-tests is `{workload.test}`"
                )
                results.append(Result(workload, bench.measure(workload, ROUNDS)))
                report(results[-1])
            summary(results)
    except BenchError as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
