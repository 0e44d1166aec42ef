"""Where does a sandboxed one-visit agent run spend the time before its agent starts?

Runs `swell run` of a one-visit prompt pipeline through the real claude CLI against its
stand-in model server (tests/twins/), sandboxed and not, `SANDBOX_TIMELINE_ROUNDS`
(default 8) rounds interleaved, and inside each run's process takes timestamps (ms since
the process started, from /proc/self/stat, 10 ms resolution; the rest from
time.perf_counter): the manifest loaded, the run planned, the prestart begun and ended
(as the code has it), the box's bwrap started, the first visit's spawn asked, the spawn
done (unsandboxed: the exec returned; sandboxed: the box's child said its pid, just
before its exec) and the run's end. Printed per phase: min and median over the rounds.
The figure that matters is `wait` (spawn done - spawn asked): what the first visit waits
for its box, beyond a fork and an exec. With `SWELL_BASELINE_SRC` (another swell's `src`)
that code runs too, interleaved, and is printed beside.

The timestamps come from wrapping swell's functions in the run's process (`--trace`
mode), so the same script measures code that does not know of it.
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

ROUNDS = int(os.environ.get("SANDBOX_TIMELINE_ROUNDS", "8"))
BASELINE = os.environ.get("SWELL_BASELINE_SRC")
HERE = Path(__file__).resolve()
DERIVED = {"wait": ("done", "asked"), "exit": ("total", "end")}
FINE = ("proxied", "prepared", "server", "spawner", "sent")
PHASES = (
    "imported",
    "project",
    "pipeline",
    "manifest",
    "preflight",
    "planned",
    "prestart",
    "prestarted",
    "thread",
    "threaded",
    "bwrap",
    "execute",
    "enter",
    "entered",
    "asked",
    "proxied",
    "prepared",
    "server",
    "spawner",
    "sent",
    "done",
    "end",
    "total",
)


def _since_start() -> float:
    """ms since this process started (its start time in clock ticks since boot)."""
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    started = ticks / os.sysconf("SC_CLK_TCK")
    return 1000 * (time.clock_gettime(time.CLOCK_BOOTTIME) - started)


def trace(out: Path, argv: list[str]) -> None:
    """Run swell's CLI with `argv` here, writing the timestamps to `out` at exit."""
    import atexit
    import functools

    origin = time.perf_counter() - _since_start() / 1000
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        if name in FINE and "asked" not in marks:
            return  # (the prestart's, before the visit)
        marks.setdefault(name, 1000 * (time.perf_counter() - origin))

    def wrap(owner: object, name: str, before: str | None, after: str | None) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapped(*args: object, **kwargs: object) -> object:
            if before:
                mark(before)
            try:
                return original(*args, **kwargs)
            finally:
                if after:
                    mark(after)

        setattr(owner, name, wrapped)

    import swell.runtime
    from swell import streamed
    from swell.engine.visit import sandboxing
    from swell.ops import preflight
    from swell.sandbox import boxes

    wrap(swell.runtime, "open_runtime", "imported", "project")
    import swell.manifest.loader

    wrap(swell.runtime, "load_pipeline", None, "pipeline")
    wrap(swell.manifest.loader, "load_pipeline", None, "pipeline")
    wrap(swell.runtime, "check_loaded", None, "manifest")
    wrap(preflight, "check_run", None, "preflight")
    wrap(swell.runtime, "execute", "execute", None)
    wrap(swell.runtime, "create_run", None, "planned")
    wrap(sandboxing, "prestart", "prestart", "prestarted")
    wrap(boxes.Server, "__init__", "bwrap", None)
    from swell.sandbox import active

    if os.environ.get("SANDBOX_TIMELINE_FINE"):  # the steps of an in-box spawn
        wrap(active, "_prepared", None, "prepared")
        wrap(active.Confinement, "proxied", None, "proxied")
        wrap(active.Confinement, "server", None, "server")
        wrap(active.Confinement, "spawner", None, "spawner")
    wrap(sandboxing, "enter", "enter", "entered")
    if hasattr(sandboxing, "_prestart"):  # on a thread of its own
        wrap(sandboxing, "_prestart", "thread", "threaded")
    lines = streamed.StreamedProcess.lines

    async def traced(self: streamed.StreamedProcess):  # type: ignore[no-untyped-def]
        mark("asked")
        async for line in lines(self):
            mark("done")
            yield line

    streamed.StreamedProcess.lines = traced  # type: ignore[method-assign]
    take, start = boxes.Boxed._take, boxes.Spawner.start
    watched: list[boxes.Boxed] = []  # a visit's processes (not a lane's server)

    def took(self: boxes.Boxed, timeout: float) -> bool:
        found = take(self, timeout)
        if self._pid is not None and self in watched:
            mark("done")
        return found

    def started(self: boxes.Spawner, *args: object, **kwargs: object) -> object:
        mark("sent")
        boxed = start(self, *args, **kwargs)  # type: ignore[arg-type]
        if boxed is not None:
            watched.append(boxed)
        return boxed

    boxes.Spawner.start = started  # type: ignore[method-assign]

    boxes.Boxed._take = took  # type: ignore[method-assign]
    create = __import__("asyncio").create_subprocess_exec

    async def created(*args: object, **kwargs: object) -> object:
        proc = await create(*args, **kwargs)
        if "asked" in marks:
            mark("done")
        return proc

    __import__("asyncio").create_subprocess_exec = created
    atexit.register(lambda: (mark("end"), out.write_text(json.dumps(marks))))
    sys.argv = ["swell", *argv]
    from swell.cli.app import main

    main()


def project(root: Path, binary: Path, sandboxed: bool) -> None:
    import yaml

    manifest = {
        "kind": "WaveManifest",
        "metadata": {"name": "sbx-timeline"},
        "runtime": {"sandbox": {"enabled": True}} if sandboxed else {},
        "adapters": {"claude": {"binary": str(binary)}},
        "personas": {"coder": {"adapter": "claude", "model": "claude-sonnet-4-5"}},
    }
    step = {"id": "ask", "persona": "coder", "exec": {"type": "prompt", "source": "say done"}}
    pipeline = {"kind": "WavePipeline", "metadata": {"name": "ask"}, "steps": [step]}
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (root / ".agents" / "pipelines" / "ask.yaml").write_text(yaml.safe_dump(pipeline))


def one(root: Path, env: dict[str, str], out: Path) -> dict[str, float]:
    argv = [sys.executable, str(HERE), "--trace", str(out), "run", "ask"]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    took = 1000 * (time.perf_counter() - started)
    if done.returncode != 0:
        sys.exit(f"swell run in {root} failed:\n{done.stderr[-2000:]}")
    found: dict[str, float] = json.loads(out.read_text())
    found["total"] = took  # (the process's exit included: its boxes closed)
    return found


def main() -> None:
    tests = HERE.parent.parent / "tests"
    sys.path.insert(0, str(tests))
    from agent_clis import cli_dir
    from twins.server import Reply, Twin

    binary = cli_dir() / "node_modules" / ".bin" / "claude"
    src = str(HERE.parent.parent / "src")
    base = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "SWELL_STORE")}
    with tempfile.TemporaryDirectory(prefix="swell-sbx-timeline-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        kinds = ("plain", "sandboxed")
        for kind in kinds:
            project(Path(tmp) / kind, binary, kind == "sandboxed")
        codes = {"this": src, **({"baseline": BASELINE} if BASELINE else {})}
        combos = [(code, kind) for code in codes for kind in kinds]
        got: dict[tuple[str, str], list[dict[str, float]]] = {c: [] for c in combos}
        with Twin(lambda request: Reply(text="done"), protocols=("anthropic",)) as twin:
            env = {**base, "HOME": str(home), "ANTHROPIC_BASE_URL": twin.url}
            env["ANTHROPIC_API_KEY"] = "dummy"
            for round_ in range(ROUNDS + 1):  # the first round warms the caches
                for code, kind in combos if round_ % 2 == 0 else combos[::-1]:
                    run_env = {**env, "PYTHONPATH": codes[code]}
                    marks = one(Path(tmp) / kind, run_env, Path(tmp) / "marks.json")
                    if round_:
                        got[code, kind].append(marks)
    print(f"one-visit claude run, {ROUNDS} rounds, load {os.getloadavg()[0]:.1f}; ms since")
    print("the process started, min / median (wait: spawn done - spawn asked; exit: its end)")
    for code, kind in combos:
        rows = got[code, kind]
        cells = []
        for phase in (*PHASES, "wait", "exit"):
            if phase in DERIVED:
                last, first = DERIVED[phase]
                values = [r[last] - r[first] for r in rows if last in r and first in r]
            else:
                values = [r[phase] for r in rows if phase in r]
            if values:
                cells.append(f"{phase} {min(values):.0f}/{statistics.median(values):.0f}")
        print(f"  {code:<8} {kind:<9} " + "  ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--trace":
        trace(Path(sys.argv[2]), sys.argv[3:])
    else:
        main()
