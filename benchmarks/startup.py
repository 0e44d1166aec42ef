"""How long does swell take to start?

Measured against `python -c pass` (the interpreter alone), in the same rounds
(docs/performance.md, "Start-up"):

- `swell --version`: the CLI's own start-up (goal: at most 60 ms over python);
- `swell run one`: a whole run of a one-step command pipeline (`echo hello`) in a
  project of its own, from the process start to its exit: imports, loading and
  checking the project, the state database, the workspace, the step, the last
  commit (goal: at most 100 ms over python);
- `swell validate`: the same project checked (goal: at most 80 ms over python);
- `swell list`, `swell status`, `swell logs` (of the newest run) in a project whose
  store holds 10,000 finished runs (goal: each at most 60 ms over python).

Every command runs as a fresh process, interleaved (the order rotates each
round); the minimum and the median of `STARTUP_BENCH_SAMPLES` (default 15) are
reported, and the goals are judged on the minimum (the machine may be noisy);
alongside, the least CPU time (user and system, the process's and its children's)
over python's, which a loaded machine inflates less than the wall time.
`SWELL_BASELINE_SRC`, the `src/` directory of another checkout, adds the same
commands for that swell, and each figure's ratio to it. Then `python -X importtime`
of `swell run one` lists the modules whose imports cost the most. Swell's own
modules are compiled first (`compileall`, as `make` does): where
PYTHONDONTWRITEBYTECODE is set, nothing else would write their bytecode, and every
process would compile them again. Exits non-zero only when a command fails.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

SAMPLES = int(os.environ.get("STARTUP_BENCH_SAMPLES", "15"))
BASELINE_SRC = os.environ.get("SWELL_BASELINE_SRC")
PYTHON = sys.executable
SWELL = str(Path(sys.executable).parent / "swell")
BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv[0] = 'swell'; "
    "from swell.cli.app import entry; entry()"
)
RUNS = 10_000  # in the store `list`, `status` and `logs` read
GOALS = {
    "swell --version": 0.060,
    "swell run one": 0.100,
    "swell validate": 0.080,
    "swell list": 0.060,
    "swell status": 0.060,
    "swell logs": 0.060,
}
MANIFEST = "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: one}\n"
PIPELINE = """\
kind: WavePipeline
metadata: {name: one}
steps:
  - id: hello
    type: command
    script: echo hello
"""


class BenchError(Exception):
    pass


CPU: dict[tuple[str, ...], list[float]] = {}  # argv -> CPU seconds (user + system)


def run(argv: Sequence[str], cwd: Path) -> float:
    """The wall time of `argv`; its CPU time (its own and its children's) is kept in
    CPU: on a loaded machine the wall time is mostly waiting for a core."""
    env = {k: v for k, v in os.environ.items() if k != "SWELL_STATE_DIR"}
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip()[-2000:]
            raise BenchError(f"{argv} exited {code}: {tail}")
    CPU.setdefault(tuple(argv), []).append(usage.ru_utime + usage.ru_stime)
    return seconds


def project(root: Path) -> Path:
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / ".agents" / "pipelines" / "one.yaml").write_text(PIPELINE)
    return root


def stored_runs(root: Path) -> Path:
    """A project whose store holds `RUNS` finished runs of 3 visits, written through
    the store's own API as the run loop commits them (benchmarks/store_lib)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from store_lib import loop_batches, write_project

    from swell.store.location import open_store

    write_project(root, 1)
    store = open_store(root / ".swell" / "state.db")
    fields = {"pipeline": "loop", "input_text": "", "workspace": "/ws"}
    for n in range(RUNS):
        run_id = f"loop-small-{n:05d}"
        store.create_run(run_id=run_id, **fields)
        for batch in loop_batches(run_id, 3, 1):
            store.emit(batch)
    store.close()
    return root


def commands(tmp: Path) -> dict[str, tuple[list[str], Path]]:
    swells = {"": [SWELL]}
    if BASELINE_SRC:
        swells["@base"] = [PYTHON, "-c", BOOT, str(Path(BASELINE_SRC).resolve())]
    store = stored_runs(tmp / "stored-runs")
    out: dict[str, tuple[list[str], Path]] = {"python -c pass": ([PYTHON, "-c", "pass"], tmp)}
    for suffix, argv in swells.items():
        where = project(tmp / f"project{suffix or '-current'}")
        out[f"swell{suffix} --version"] = ([*argv, "--version"], tmp)
        out[f"swell{suffix} run one"] = ([*argv, "run", "one"], where)
        out[f"swell{suffix} validate"] = ([*argv, "validate"], where)
        for command in ("list", "status", "logs"):
            out[f"swell{suffix} {command}"] = ([*argv, command], store)
    return out


def compiled() -> None:
    """Bytecode for swell's own modules, this checkout's and the baseline's."""
    import swell

    for src in (Path(swell.__file__).parents[1], *([Path(BASELINE_SRC)] if BASELINE_SRC else [])):
        subprocess.run([PYTHON, "-m", "compileall", "-q", str(src)], check=False)


def import_profile(cwd: Path, top: int = 12) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of the costliest top-level imports."""
    proc = subprocess.run(
        [PYTHON, "-X", "importtime", SWELL, "run", "one"],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if m and len(m.group(3)) <= 2:  # imported by swell's own modules, or at top
            rows.append((int(m.group(2)), m.group(4)))
    return sorted(rows, reverse=True)[:top]


def main() -> int:
    compiled()
    with tempfile.TemporaryDirectory(prefix="swell-startup-bench-") as tmp:
        cmds = commands(Path(tmp))
        names = list(cmds)
        times: dict[str, list[float]] = {n: [] for n in names}
        try:
            for argv, cwd in cmds.values():  # warm-up: caches, and each project's database
                run(argv, cwd)
            for r in range(SAMPLES):
                order = names[r % len(names) :] + names[: r % len(names)]
                for name in order:
                    times[name].append(run(*cmds[name]))
        except BenchError as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
        base_min = min(times["python -c pass"])
        base_med = statistics.median(times["python -c pass"])
        print(
            f"start-up: {SAMPLES} samples each, interleaved; python {PYTHON}; "
            f"load {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores"
        )
        cpu = {name: min(CPU[tuple(cmds[name][0])]) for name in names}
        print(
            f"  {'':<24} {'min':>8} {'median':>8} {'min-python':>11} {'med-python':>11}"
            f" {'CPU-python':>11}"
        )
        for name in names:
            best, med = min(times[name]), statistics.median(times[name])
            print(
                f"  {name:<24} {best * 1e3:6.1f}ms {med * 1e3:6.1f}ms "
                f"{(best - base_min) * 1e3:9.1f}ms {(med - base_med) * 1e3:9.1f}ms"
                f" {(cpu[name] - cpu['python -c pass']) * 1e3:9.1f}ms"
            )
        for name, goal in GOALS.items():
            over = min(times[name]) - base_min
            verdict = "PASS" if over <= goal else "FAIL"
            base = times.get(name.replace("swell", "swell@base", 1))
            was = (
                f" (baseline {(min(base) - base_min) * 1e3:.1f} ms, "
                f"now/baseline {over / max(min(base) - base_min, 1e-9):.2f}x)"
                if base
                else ""
            )
            used = (cpu[name] - cpu["python -c pass"]) * 1e3
            print(
                f"  goal: {name} <= {goal * 1e3:.0f} ms over python: {over * 1e3:.1f} ms"
                f" (CPU {used:.1f} ms){was}  {verdict}"
            )
        print("\ncostliest imports of `swell run one` (cumulative, -X importtime, one sample):")
        for micros, module in import_profile(Path(tmp) / "project-current"):
            print(f"  {micros / 1000:7.1f} ms  {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
