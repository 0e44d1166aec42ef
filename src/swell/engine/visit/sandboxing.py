"""The sandbox of a visit (`runtime.sandbox`; docs/security.md): which backend, and the
box its processes run in, built from the run's plan and the visit's workspace."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from swell import sandbox
from swell.engine.visit.context import RunPlan
from swell.errors import SwellError
from swell.events import models as ev
from swell.manifest.models import Step
from swell.manifest.wave_models import SandboxConfig
from swell.sandbox import logins
from swell.sandbox.paths import hidden_paths, homes, path_entries_under, real
from swell.sandbox.proxy import EgressProxy, Record, egress_directory
from swell.sandbox.settings import Settings, backend_for, remove_containers, settings_of
from swell.workspace.workspace import STEP_DIRS, Workspace

HOME_DIR = ".home"  # the per-run HOME, in the run's directory (no step id starts with a dot)


def settings(plan: RunPlan) -> Settings | None:
    """The run's sandbox, or None: off in wave.yaml, or `--no-sandbox`."""
    if plan.options.no_sandbox:
        return None
    return settings_of(plan.project.manifest.runtime.sandbox)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _readonly(ws: Workspace) -> tuple[list[Path], list[Path]]:
    """The workspace's `mode: readonly` mounts, as long as they are what swell put there
    (a link a step left would show its target), and Wave's `.agents/` in each, which
    stays writable (a step that runs in the mount writes its outputs there, as without
    the sandbox: workspace.add_mounts)."""
    root, found, outputs = real(ws.path), [], []
    for mount in ws.mounts:
        if not mount.readonly:
            continue
        path = ws.path / mount.target if mount.target != "." else ws.path
        if not os.path.islink(path) and _inside(real(path), root):
            found.append(real(path))
            own = path / STEP_DIRS[0]
            if own.is_dir() and not own.is_symlink() and real(own).parent == real(path):
                outputs.append(real(own))
    return found, outputs


def git_paths(ws: Workspace) -> tuple[list[Path], list[Path]]:
    """(writable, read-only) paths a `git commit` in a worktree workspace needs: the
    worktree's own git directory (index, HEAD, its logs), the object store (new loose
    objects) and the directories of its branch's ref and reflog; its `commondir` and
    `gitdir` pointers, the packs and `objects/info` (alternates) stay read-only, and the
    project's config, hooks and other refs are not made writable (docs/security.md)."""
    if ws.git_dir is None:
        return [], []
    own = real(ws.git_dir)
    common = own.parent.parent  # swell found it in the project's `.git/worktrees/`
    writable = [own, common / "objects"]
    if ws.branch:
        for tree in ("refs/heads", "logs/refs/heads"):
            where = (common / tree / ws.branch).parent
            where.mkdir(parents=True, exist_ok=True)  # in the project's .git, by swell
            if _inside(real(where), common):
                writable.append(real(where))
    pointers = ("commondir", "gitdir", "config.worktree")
    readonly = [common / "objects" / "pack", common / "objects" / "info"]
    readonly += [own / name for name in pointers]
    return writable, [p for p in readonly if p.exists() and not p.is_symlink()]


def adapter_config(plan: RunPlan, step: Step) -> tuple[str | None, dict[str, object]]:
    """The adapter type of `step`'s visits and its `adapters.NAME.options`."""
    manifest = plan.project.manifest
    name = plan.adapter_of(step)
    if not name:
        return None, {}
    config = manifest.adapters.get(name)
    return manifest.adapter_type(name), dict(config.options) if config else {}


def _agent_files(adapter_type: str | None, run_home: Path) -> tuple[tuple[Path, Path], ...]:
    """The user's settings of the visit's agent CLI copied into the run's home, and its
    login files to bind there (sandbox/logins.py)."""
    user_home = next(homes(), None)
    if adapter_type is None or user_home is None:
        return ()
    logins.copy_settings(adapter_type, os.environ, user_home, run_home)
    found = tuple(logins.logins(adapter_type, os.environ, user_home, run_home))
    for _, target in found:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return found


@functools.lru_cache(maxsize=8)
def _view(
    state_dir: Path, root: Path, store: str | None, path: str
) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(hidden, shown again) of a project's visits: the same for every visit of a run
    (worked out once per process: it resolves every PATH entry)."""
    project = real(root)
    hidden = hidden_paths(state_dir, project, store)
    # (a PATH directory under /tmp too: the box's /tmp is its own)
    visible = path_entries_under([*hidden, Path("/tmp")], path)
    if project not in hidden:  # a project that is the user's HOME is not shown again
        visible.append(project)
    return tuple(hidden), tuple(visible)


def box(
    plan: RunPlan,
    ws: Workspace,
    settings: Settings,
    feedback: str | None,
    adapter_type: str | None = None,
) -> sandbox.Box:
    """What the visit's processes see: its workspace (and a worktree's own git directory)
    writable, the run's HOME writable, the project read-only, and not the user's HOME,
    swell's state directory or the store."""
    state_dir = plan.run_dir.parent.parent
    store = plan.project.manifest.runtime.store
    hidden, shown = _view(state_dir, plan.project.root, store, os.environ.get("PATH", ""))
    home = plan.run_dir / HOME_DIR
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if home.is_symlink():
        raise sandbox.Unavailable(f"{home} is a symbolic link; refusing to use it as HOME")
    visible = list(shown)
    if feedback:  # the review feedback a rework visit is given, in the run's directory
        visible.append(real(Path(feedback)))
    git_writable, git_readonly = git_paths(ws)
    readonly, outputs = _readonly(ws)
    return sandbox.Box(
        writable=(real(ws.path), *git_writable),
        home=real(home),
        hidden=hidden,
        visible=tuple(visible),
        readonly=(*readonly, *git_readonly),
        rewritable=tuple(outputs),
        env_passthrough=settings.env_passthrough,
        tmp_size=settings.tmp_size_mb * 1024 * 1024,
        logins=_agent_files(adapter_type, home),
    )


def allowed_domains(plan: RunPlan, persona: str | None) -> tuple[list[str], list[str] | None]:
    """(the hosts a visit may reach, the ceiling they stay within): the persona's
    `sandbox.allowed_domains`, else `runtime.sandbox.default_allowed_domains`, as Wave
    picks them; a persona only narrows the runtime's list when the runtime lists hosts
    (its list is then the ceiling), and stands alone when it lists none."""
    config = plan.project.manifest.runtime.sandbox
    runtime = list(config.default_allowed_domains) if config else []
    found = plan.project.manifest.personas.get(persona) if persona else None
    if found is not None and found.sandbox is not None and found.sandbox.allowed_domains:
        return list(found.sandbox.allowed_domains), (runtime or None)
    return runtime, None


def noter(
    emit: Callable[[Sequence[ev.BaseEvent]], None], step_id: str, visit: int
) -> Callable[[str], None]:
    """A warning of the visit, from swell's event loop (the sandbox's pids watch)."""

    def note(message: str) -> None:
        event = ev.Warning(message=message)
        event.step_id, event.visit = step_id, visit
        emit([event])

    return note


def recorder(emit: Callable[[Sequence[ev.BaseEvent]], None], step_id: str, visit: int) -> Record:
    """Each connection the proxy is asked for, as an event of the visit (from its thread)."""
    loop = asyncio.get_running_loop()

    def record(host: str, port: int, allowed: bool) -> None:
        event = ev.SandboxConnection(host=host, port=port, allowed=allowed)
        event.step_id, event.visit = step_id, visit
        loop.call_soon_threadsafe(emit, [event])

    return record


def enter(
    plan: RunPlan,
    ws: Workspace,
    feedback: str | None = None,
    step: Step | None = None,
    record: Record | None = None,
    note: Callable[[str], None] | None = None,
) -> None:
    """Make the visit's sandbox current (until `sandbox.confining` of the visit ends);
    Unavailable when the backend cannot run here. With `record`, the sandbox has no
    network but an egress proxy that lets `allowed_domains` through."""
    chosen = settings(plan)
    if chosen is not None:
        sandbox.enter(confinement(plan, chosen, ws, feedback, step, record, note))


def confinement(
    plan: RunPlan,
    chosen: Settings,
    ws: Workspace,
    feedback: str | None = None,
    step: Step | None = None,
    record: Record | None = None,
    note: Callable[[str], None] | None = None,
) -> sandbox.Confinement:
    """The sandbox of a visit of `step` in `ws` (see `enter`)."""
    settled(plan.run_id)
    backend = backend_for(chosen)
    adapter_type, options = adapter_config(plan, step) if step else (None, {})
    persona = step.persona if step else None
    made = box(plan, ws, chosen, feedback, adapter_type)
    pids = chosen.pids_limit
    if record is None:
        return sandbox.Confinement(backend, made, pids_limit=pids, note=note)
    domains, ceiling = allowed_domains(plan, persona)
    endpoint = options.get("base_url")  # the agent's model, named by its adapter's options
    url = endpoint if isinstance(endpoint, str) else None
    # the visits of the run with this allow-list put their proxies' sockets in one
    # directory, so their agents and commands share the run's box (sandbox/boxes.py)
    egress = egress_directory(
        (plan.run_id, tuple(domains), tuple(ceiling or ()), ceiling is None, url)
    )
    proxy = functools.partial(_proxy, domains, record, ceiling, url, egress)
    return sandbox.Confinement(
        backend, made, proxy, bool(domains), pids_limit=pids, note=note, egress=egress
    )


FIRST_BOXES = 2  # boxes `prestart` starts at most (each is a bwrap and a Python)
KEPT = 256  # runs whose prestart is remembered (see `prestart`)
SETTLE = 30.0  # seconds a visit waits at most for its run's prestart to be done
_pending: dict[str, threading.Event] = {}  # run id -> set once its prestart is done
_queue: queue.SimpleQueue[Callable[[], None]] | None = None  # the starter thread's work
_queue_lock = threading.Lock()


def prestart(plan: RunPlan, steps: Iterable[Step]) -> None:
    """Start the boxes of the run's first visits while the run starts (a visit's first
    process otherwise waits for its box: bwrap and the box server's Python), on the
    box starter thread: this returns at once, and the run's own start-up (its lint,
    its store, its services) goes on meanwhile. Called as early as the run's plan is
    known (`swell run`, before its lint: cli/runs.py), and where a process goes on with
    a run (executors/local.py, engine/loop/runner.py); once a run per process. Only
    for steps that need nothing done first (no dependencies) in the run's own directory
    (a worktree or a mount is made when the visit opens it); a box no visit uses is
    closed when idle (sandbox/boxes.py). Never raises: it only saves time."""
    if plan.run_id in _pending:
        return
    chosen = settings(plan)
    if chosen is None or chosen.backend != "bubblewrap":
        return
    if len(_pending) >= KEPT:  # (a long-lived `swell serve`): forget the settled ones
        for run_id, event in list(_pending.items()):
            if event.is_set():
                del _pending[run_id]
    done = _pending[plan.run_id] = threading.Event()
    _starter().put(functools.partial(_prestart, plan, chosen, list(steps), done))


def _starter() -> queue.SimpleQueue[Callable[[], None]]:
    """The box starter thread's queue. One thread, kept until swell exits: bwrap's
    --die-with-parent follows the thread that started it, not the process."""
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = queue.SimpleQueue()
            name = "swell-box-starter"
            threading.Thread(target=_serve, args=(_queue,), name=name, daemon=True).start()
        return _queue


def _serve(work: queue.SimpleQueue[Callable[[], None]]) -> None:
    while True:
        with contextlib.suppress(Exception):  # (a prestart only saves time)
            work.get()()


def settled(run_id: str) -> None:
    """Wait until the run's prestart, if any, is done (a visit's box is then found,
    not started twice, and the run's home is not written by both at once)."""
    found = _pending.get(run_id)
    if found is not None and threading.current_thread().name != "swell-box-starter":
        found.wait(SETTLE)


async def settle(run_id: str) -> None:
    """`settled`, without holding the event loop (other runs' visits go on meanwhile)."""
    found = _pending.get(run_id)
    if found is not None and not found.is_set():
        await asyncio.get_running_loop().run_in_executor(None, found.wait, SETTLE)


def _prestart(plan: RunPlan, chosen: Settings, steps: list[Step], done: threading.Event) -> None:
    """On the box starter thread: start the boxes (see `prestart`), then ready their
    lanes (each waits for its box to be up); `done` is set at the end, whatever happened."""
    lanes: list[Callable[[], None]] = []
    try:
        plan.workspace.mkdir(parents=True, exist_ok=True)  # (bound into the box)
        started: set[tuple[str | None, str]] = set()
        for step in steps:
            if len(started) >= FIRST_BOXES:
                break
            if step.dependencies or step.workspace is not None:
                continue
            program, agent = _program_of(plan, step)
            if program is None or (step.persona, program) in started:
                continue
            started.add((step.persona, program))
            ws = Workspace(plan.workspace, "directory")
            made = confinement(plan, chosen, ws, None, step, _ignored)
            ready = made.prestart(program, agent, plan.run_id)
            if ready is not None:
                lanes.append(ready)
            made.close()
        for ready in lanes:  # once every box is on its way: each waits for its box
            ready()
    except (SwellError, OSError):
        return
    finally:
        done.set()


def _ignored(host: str, port: int, allowed: bool) -> None:
    """No proxy is made for a box started ahead: nothing is recorded."""


def _program_of(plan: RunPlan, step: Step) -> tuple[str | None, bool]:
    """(the program a step's visit starts, whether it is an agent CLI): the binary of
    the adapter the step runs on (as engine/agent/agents.py picks it), a command's
    shell, or None (a kind that starts no process of its own, as far as is known)."""
    manifest = plan.project.manifest
    name = plan.adapter_of(step)
    if not name:
        return ("sh", False) if step.script is not None else (None, False)
    config = manifest.adapters.get(name)
    binary = os.path.expanduser(
        config.binary if config and config.binary else manifest.adapter_type(name)
    )
    if os.sep in binary and not os.path.isabs(binary):
        binary = str(plan.project.root / binary)
    return binary, True


def _proxy(
    domains: list[str],
    record: Record,
    ceiling: list[str] | None,
    endpoint: str | None,
    egress: Path,
) -> EgressProxy:
    made = EgressProxy(domains, record, ceiling, egress)
    if endpoint:
        made.allow_url(endpoint)
    return made


def unsandboxed(config: SandboxConfig | None, no_sandbox: bool) -> str | None:
    """The warning of a run whose wave.yaml asks for a sandbox that `--no-sandbox` turned
    off, or None."""
    wanted = settings_of(config)
    if wanted is None or not no_sandbox:
        return None
    return (
        f"--no-sandbox: runtime.sandbox ({wanted.backend}) is off for this run; its steps "
        "run with your user's files, environment and network"
    )


def check(config: SandboxConfig | None, no_sandbox: bool) -> str | None:
    """Before a run starts: Unavailable when its sandbox cannot run here (the run does
    not start), else the `unsandboxed` warning, if any."""
    chosen = None if no_sandbox else settings_of(config)
    if chosen is not None:
        backend_for(chosen)
    return unsandboxed(config, no_sandbox)


def notes(plan: RunPlan) -> list[ev.Warning]:
    """The events a run starts with about its sandbox (`--no-sandbox` is recorded)."""
    warning = unsandboxed(plan.project.manifest.runtime.sandbox, plan.options.no_sandbox)
    return [ev.Warning(message=warning)] if warning else []


async def left_containers(plan: RunPlan) -> list[ev.Warning]:
    """On resume: the run's containers a killed swell left running (docker backend:
    they are the daemon's, and outlive swell and their `docker run` clients), removed
    before its visits go on; a warning names them."""
    if plan.options.no_sandbox:
        return []
    config, run = plan.project.manifest.runtime.sandbox, plan.run_id
    gone = await asyncio.to_thread(remove_containers, config, [run])
    if not gone:
        return []
    message = f"removed {len(gone)} container(s) of this run that a stopped swell left running"
    return [ev.Warning(message=f"{message}: {', '.join(gone)}")]
