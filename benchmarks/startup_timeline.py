"""Where does `swell run` of a one-step command pipeline spend its wall time?

A timeline of one whole process (docs/performance.md, "Start-up"), from the moment
its parent starts it to the moment the parent sees it exit: the interpreter, the
imports, and then the phases of the run, each timed where it is called. The phases
are swell's own functions, wrapped here with a timer before the command runs, plus
pydantic's plugin lookup, the first validation (model build) of each pydantic model,
and every subprocess (git, the step's shell). Nested phases are indented; times are
milliseconds from the process start.

    python benchmarks/startup_timeline.py [ROUNDS]

prints the median of ROUNDS (default 5) runs, each a fresh process, after one run
that fills the manifest cache (`TIMELINE_SRC`: the `src/` of another checkout to time
instead).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# "module:Qualified.name" of the phases timed (skipped where a checkout lacks one)
PHASES = (
    "swell.cli.common:runtime",
    "swell.manifest.loader:load_project",
    "swell.store.location:open_store",
    "swell.runtime:check_pipeline",
    "swell.manifest.loader:load_pipeline",
    "swell.runtime:check_loaded",
    "swell.ops.preflight:check_run",
    "swell.ops.preflight:run_warnings",
    "swell.cli.runs:_check_sandbox",
    "swell.cli.runs:_executor",
    "swell.executors.local:LocalExecutor.start",
    "swell.runtime:create_run",
    "swell.executors.local:LocalExecutor.follow",
    "swell.engine.visit.sandboxing:prestart",
    "swell.runtime:execute",
    "swell.engine.loop.runner:Runner.run",
    "swell.engine.visit.execute:VisitExecution.run",
    "swell.workspace.workspace:open_directory",
    "swell.cli.runs:_report",
    "pydantic.plugin._loader:get_plugins",
    "pydantic.main:BaseModel.model_rebuild",
)

CHILD = r"""
import sys, time, json, os
T0 = float(os.environ["TIMELINE_T0"])
sys.path.insert(0, os.environ["TIMELINE_SRC"])
sys.path.insert(0, os.environ["TIMELINE_HERE"])
import startup_timeline as tl
tl.child(T0)
"""


def child(t0: float) -> None:
    """In the timed process: import, wrap the phases, run the command, report."""
    boot = time.perf_counter()
    marks: list[tuple[float, float, int, str]] = []
    depth = [0]

    def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        import asyncio

        if asyncio.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def acall(*args: Any, **kwargs: Any) -> Any:
                start, d = time.perf_counter(), depth[0]
                depth[0] += 1
                try:
                    return await fn(*args, **kwargs)
                finally:
                    depth[0] -= 1
                    marks.append((start, time.perf_counter(), d, label))

            return acall

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            named = label
            if label.endswith("model_rebuild") and args:  # which model
                named = f"pydantic model_rebuild {getattr(args[0], '__name__', '')}"
            elif label == "run" and args and isinstance(args[0], list):  # which command
                named = " ".join(str(a) for a in args[0][:2])
            start, d = time.perf_counter(), depth[0]
            depth[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
                marks.append((start, time.perf_counter(), d, named))

        return call

    sys.argv = ["swell", "run", "one"]
    from swell.cli import app

    start = time.perf_counter()
    app._warm(sys.argv[1:])
    marks.append((start, time.perf_counter(), 0, "imports (the command's modules)"))
    wrapping = time.perf_counter()
    for phase in PHASES:
        module_name, _, path = phase.partition(":")
        try:
            owner: Any = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for part in parents:
                owner = getattr(owner, part)
            fn = getattr(owner, name)
        except (ImportError, AttributeError):
            continue
        label = path.rsplit(".", 1)[-1] if "pydantic" not in module_name else f"pydantic {name}"
        if isinstance(owner.__dict__.get(name), classmethod):
            setattr(owner, name, classmethod(timed(label, fn.__func__)))
        else:
            setattr(owner, name, timed(label, fn))
        # the command modules took the name at import: rebind where they did
        for mod in list(sys.modules.values()):
            named = getattr(mod, "__name__", "")
            if named.startswith("swell.") and mod.__dict__.get(name) is fn:
                setattr(mod, name, getattr(owner, name))
    subprocess.run = timed("run", subprocess.run)  # type: ignore[assignment]
    popen_init = subprocess.Popen.__init__

    def popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        s = time.perf_counter()
        popen_init(self, args, *rest, **kw)
        word = args[1] if isinstance(args, list) and len(args) > 1 else ""
        head = os.path.basename(args[0] if isinstance(args, list) else str(args).split()[0])
        marks.append((s, time.perf_counter(), depth[0], f"spawn {head} {word}".strip()))

    subprocess.Popen.__init__ = popen  # type: ignore[method-assign]
    wrapped = time.perf_counter()
    shift = wrapped - wrapping  # the wrapping is not the command's time

    def at(t: float) -> float:
        return t - t0 - (shift if t >= wrapped else 0.0)

    status = 0
    try:
        app.main()
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 0
    end = time.perf_counter()
    out = {
        "boot": boot - t0,
        "end": at(end),
        "shift": shift,
        "status": status,
        "marks": [(at(a), at(b), d, label) for a, b, d, label in marks],
    }
    sys.stdout.flush()
    os.write(int(os.environ["TIMELINE_FD"]), json.dumps(out).encode())
    os._exit(0)


def one(src: str, where: Path) -> dict[str, Any]:
    read, write = os.pipe()
    env = dict(os.environ, TIMELINE_SRC=src, TIMELINE_HERE=str(Path(__file__).parent))
    env["TIMELINE_FD"] = str(write)
    env.pop("SWELL_STATE_DIR", None)
    t0 = time.perf_counter()
    env["TIMELINE_T0"] = repr(t0)
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], cwd=where, env=env, pass_fds=(write,),
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    proc.wait()
    exited = time.perf_counter() - t0
    os.close(read)
    result: dict[str, Any] = json.loads(data)
    result["exit"] = exited - result["shift"]
    return result


def project(root: Path) -> Path:
    from startup import MANIFEST, PIPELINE

    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / ".agents" / "pipelines" / "one.yaml").write_text(PIPELINE)
    return root


def merged(results: list[dict[str, Any]]) -> list[tuple[float, float, int, str]]:
    """The median start and end of each phase (the n-th time a label occurs)."""
    keyed: dict[tuple[str, int, int], list[tuple[float, float]]] = {}
    order: dict[tuple[str, int, int], float] = {}
    for result in results:
        seen: dict[str, int] = {}
        for start, end, depth, label in result["marks"]:
            n = seen[label] = seen.get(label, 0) + 1
            keyed.setdefault((label, depth, n), []).append((start, end))
            order.setdefault((label, depth, n), start)
    import statistics

    rows = []
    for key, spans in keyed.items():
        if len(spans) * 2 < len(results):
            continue
        rows.append(
            (
                statistics.median(s for s, _ in spans),
                statistics.median(e for _, e in spans),
                key[1],
                key[0]
                + (f" (in {len(spans)} of {len(results)})" if len(spans) != len(results) else ""),
            )
        )
    return sorted(rows)


def main() -> None:
    import statistics
    import tempfile

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    src = os.environ.get("TIMELINE_SRC") or str(Path(__file__).parents[1] / "src")
    subprocess.run([sys.executable, "-m", "compileall", "-q", src], check=False)
    with tempfile.TemporaryDirectory() as tmp:
        where = project(Path(tmp) / "one")
        one(src, where)  # the manifest cache filled, as after any first run
        results = [one(src, where) for _ in range(rounds)]
    failed = [r["status"] for r in results if r["status"]]
    if failed:
        sys.exit(f"swell run exited {failed}")
    med = statistics.median
    load = os.getloadavg()[0]
    print(f"{'start':>7} {'end':>7} {'ms':>6}  phase  (median of {rounds}; {src}; load {load:.1f})")
    print(f"{0:7.1f} {med(r['boot'] for r in results) * 1e3:7.1f}")
    rows = merged(results)
    for start, end, depth, label in rows:
        ms = (end - start) * 1e3
        print(f"{start * 1e3:7.1f} {end * 1e3:7.1f} {ms:6.1f}  {'  ' * depth}{label}")
    finish = med(r["end"] for r in results) * 1e3
    exit_ = med(r["exit"] for r in results) * 1e3
    print(f"{finish:7.1f} {exit_:7.1f} {exit_ - finish:6.1f}  exit (as `entry` does it)")
    print(f"{'':7} {exit_:7.1f}         in all")


if __name__ == "__main__":
    main()
