"""The box of the visit running in this task, and the one call the subprocess runner
makes at each spawn (`confine`)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from swell.sandbox import boxes, logins
from swell.sandbox.base import PROXY_PORT, Backend, Box
from swell.sandbox.docker import Docker
from swell.sandbox.env import confined_env
from swell.sandbox.limits import PidsCgroup, pids_root, rlimit_prefix

if TYPE_CHECKING:
    from swell.sandbox.proxy import EgressProxy

# where an agent CLI talks to its model when no base URL variable says otherwise, by
# the names its adapter passes (`inherit`): let through with the visit's allowed_domains
DEFAULT_ENDPOINTS = {
    "ANTHROPIC_": ("api.anthropic.com",),
    "OPENAI_": ("api.openai.com",),
    "CODEX_": ("api.openai.com", "chatgpt.com"),
    "GEMINI_": ("generativelanguage.googleapis.com",),
}
WATCH = 0.25  # seconds between looks at a visit's pids cgroup
_containers = itertools.count(1)


@dataclass(frozen=True)
class Confinement:
    """A visit's sandbox. With `proxy`, its processes have no network but what the egress
    proxy `proxy()` makes lets through: it is made for the first process that may use it
    (an agent CLI, or any process when `allowed_domains` lists hosts), else none is (a
    process with nothing allowed needs no forwarder), and closed with the visit."""

    backend: Backend
    box: Box
    proxy: Callable[[], EgressProxy] | None = None
    domains: bool = False  # `allowed_domains` lists hosts
    made: list[EgressProxy] = field(default_factory=list)
    pids_limit: int | None = None  # processes the visit's boxes may hold at once
    note: Callable[[str], None] | None = None  # a warning of the visit
    cgroups: list[PidsCgroup] = field(default_factory=list)
    agent_read_only: list[bool] = field(default_factory=list)  # see `read_only_agent`
    watching: list[asyncio.TimerHandle] = field(default_factory=list)
    servers: list[boxes.Server] = field(default_factory=list)  # boxes the visit used
    lanes: list[tuple[boxes.Server, boxes.Lane]] = field(default_factory=list)  # its own
    marks: list[Path] = field(default_factory=list)  # logins bound by bwraps of its own
    containers: list[str] = field(default_factory=list)  # docker's (sandbox/docker.py)
    egress: Path | None = None  # where `proxy()` puts its socket (the box is bound to it)

    def limited(self, argv: list[str]) -> tuple[list[str], list[str]]:
        """(prefix outside, prefix inside) that bound the processes of `argv`'s box:
        a pids cgroup of the visit, else RLIMIT_NPROC inside (not for root: exempt)."""
        if self.pids_limit is None:
            return [], []
        if not self.cgroups:
            root = pids_root()
            if root is None:
                return [], ([] if os.getuid() == 0 else rlimit_prefix(self.pids_limit))
            self.cgroups.append(PidsCgroup.take(root, self.pids_limit))
            self._watch()
        return self.cgroups[0].joining([]), []

    def server(self, box: Box, run: str) -> boxes.Server:
        """The box of `box`'s shape in `run` (started for its first process)."""
        binary = getattr(self.backend, "binary", self.backend.name)
        key = boxes.key_of(binary, box, run)
        for server in self.servers:
            if server.key == key and server.alive():
                return server
        marks = tuple(target for _, target in box.logins)
        made = boxes.server_for(key, functools.partial(_server_argv, self.backend, box), run, marks)
        self.servers.append(made)
        return made

    def spawner(self, server: boxes.Server) -> boxes.Spawner | None:
        """What starts the visit's processes in `server`'s box: the box itself without a
        pids limit, else the visit's lane there (its pids cgroup); None when they must
        get a bwrap each: the visit's cgroup is taken already (an agent's, another
        box's), or there is none (the RLIMIT_NPROC fallback would count the whole box)."""
        if self.pids_limit is None:
            return server
        for owner, held in self.lanes:
            if owner is server:
                return held
        root = pids_root()
        if self.cgroups or root is None:
            return None
        limit = self.pids_limit
        lane = server.lane(lambda: PidsCgroup.take(root, limit))
        if lane is None:
            return None
        self.lanes.append((server, lane))
        self.cgroups.append(lane.cgroup)
        self._watch()
        return lane

    def _watch(self) -> None:
        """Every WATCH seconds: a visit that reached its pids limit (a fork bomb, which
        would spin at the limit until its timeout) is ended at once, and told why."""
        cgroup = self.cgroups[0]
        if cgroup.reached():
            cgroup.kill()
            if self.note is not None:
                self.note(
                    f"sandbox: the step's processes reached the pids limit "
                    f"({cgroup.limit}, runtime.sandbox.pids_limit); they were ended"
                )
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # started outside swell's event loop: bounded, not watched
            return
        self.watching[:] = [loop.call_later(WATCH, self._watch)]

    def close(self) -> None:
        """End what the visit's sandbox left: its proxy, its watch, its cgroup."""
        for proxy in self.made:
            proxy.close()
        for handle in self.watching:
            handle.cancel()
        laned = [lane.cgroup for _, lane in self.lanes]
        for cgroup in self.cgroups:
            if cgroup not in laned:
                cgroup.give_back()
        for server, lane in self.lanes:  # what the visit left there ends; kept for the next
            server.give_back(lane)
        for server in self.servers:  # /tmp is emptied before the box's next process
            boxes.release(server)
        logins.release(self.marks)
        self.marks.clear()
        if isinstance(self.backend, Docker):  # the client's end does not end the container
            self.backend.remove(self.containers)

    def proxied(self, agent: bool) -> tuple[Box, EgressProxy | None]:
        """The box a process gets (`agent`: an agent CLI, which reaches its model)."""
        if self.proxy is None:
            return self.box, None
        if not (agent or self.domains):
            return replace(self.box, network=False), None
        if not self.made:
            self.made.append(self.proxy())
        return _offline(self.box, self.made[0].path), self.made[0]

    def prestart(self, program: str, agent: bool, run: str) -> Callable[[], None] | None:
        """Start the long-lived box a process of `program` (an agent CLI's if `agent`) will
        get, and ask for a lane in it, without waiting for either: the box starts while
        the run does its other start-up work, and is up when its first process needs
        it. Returned: what waits for the box and readies the lane (a cgroup move), if
        there is one. Nothing with a backend other than bubblewrap (each process is
        then a container)."""
        if self.backend.name != "bubblewrap":
            return None
        box = self.box
        if self.proxy is not None and (agent or self.domains) and self.egress is not None:
            box = _offline(box, self.egress / "next.sock")  # the key holds its directory
        elif self.proxy is not None:
            box = replace(box, network=False)
        box = _fitted(self, box, program, os.environ.get("PATH"), agent)
        server = self.server(box, run)
        root = pids_root() if self.pids_limit is not None else None
        if root is None or self.pids_limit is None or server.lanes:
            return None
        limit = self.pids_limit
        lane = server.prepare_lane(lambda: PidsCgroup.take(root, limit))
        return None if lane is None else functools.partial(server.ready_lane, lane)


def _server_argv(backend: Backend, box: Box, fd: str) -> list[str]:
    """bwrap running the box's process server (on swell's Python, shown read-only)."""
    runtime = Path(os.path.realpath(sys.base_prefix))
    shown = box if not _hidden(runtime, box) else replace(box, visible=(*box.visible, runtime))
    argv = [*boxes.PYTHON_ARGS, boxes.SERVER, fd]
    return backend.wrap(argv, Path("/"), shown, forward=False)  # it forwards itself


_current: contextvars.ContextVar[Confinement | None] = contextvars.ContextVar(
    "swell_sandbox", default=None
)


def current() -> Confinement | None:
    """The sandbox of the visit running in this task, if any."""
    return _current.get()


@contextlib.contextmanager
def confining(confinement: Confinement | None) -> Iterator[None]:
    """Inside, every process swell.process starts runs in `confinement` (None: none)."""
    token = _current.set(confinement)
    try:
        yield
    finally:
        entered = _current.get()
        if entered is not confinement and entered is not None:
            entered.close()
        _current.reset(token)


def enter(confinement: Confinement | None) -> None:
    """Make `confinement` current until the enclosing `confining` block ends (a visit
    learns its workspace only once it has begun)."""
    _current.set(confinement)


def read_only_agent() -> None:
    """The current visit's agent CLI gets its workspace read-only in the sandbox (an
    adapter whose own read-only sandbox cannot run inside swell's: codex)."""
    found = _current.get()
    if found is not None and not found.agent_read_only:
        found.agent_read_only.append(True)


def scratch_root() -> Path | None:
    """Where a visit's scratch files go so that its sandboxed processes see them (inside
    the box's home: /tmp is private to each process), or None for the system's temp dir."""
    found = _current.get()
    if found is None:
        return None
    root = found.box.home / ".scratch"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


def program_root(program: str, path: str | None) -> Path | None:
    """What must be visible for `program` to run: its file, or for a node package
    (`node_modules/.bin/claude` -> `.../node_modules/@anthropic-ai/claude-code/cli.js`)
    the directory that holds its node_modules."""
    import shutil

    found = program if os.sep in program else shutil.which(program, path=path)
    if found is None:
        return None
    real = os.path.realpath(found)
    marker = f"{os.sep}node_modules{os.sep}"
    if marker in real:
        return Path(real.split(marker, 1)[0])
    return Path(real).parent


def _offline(box: Box, proxy: Path) -> Box:
    """`box` without network but through the proxy at `proxy` (the forwarder runs on
    swell's Python)."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
    env = {**box.extra_env, **dict.fromkeys(names, url), "NO_PROXY": "", "no_proxy": ""}
    runtime = (Path(os.path.realpath(sys.base_prefix)), Path(__file__).resolve().parent)
    return replace(box, proxy=proxy, extra_env=env, visible=(*box.visible, *runtime))


def _allow_endpoints(proxy: EgressProxy, env: Mapping[str, str], inherit: Iterable[str]) -> None:
    """An agent CLI's model endpoint gets through its sandbox's proxy: the hosts of its
    base URL variables, else its provider's default API host."""
    names = [n.rstrip("*") for n in inherit]
    urls = [v for k, v in env.items() if k.startswith(tuple(names)) and k.endswith("_BASE_URL")]
    for url in urls:
        proxy.allow_url(url)
    if not urls:
        for prefix, hosts in DEFAULT_ENDPOINTS.items():
            if prefix in names:
                proxy.hosts.update(hosts)


def _hidden(path: Path, box: Box) -> bool:
    """Whether `path` is out of sight in the box (hidden, or under its private /tmp)."""
    return any(path == h or h in path.parents for h in (*box.hidden, Path("/tmp")))


def _prepared(
    found: Confinement,
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    inherit: tuple[str, ...],
) -> tuple[Box, dict[str, str]]:
    """The box `argv` runs in and its environment there. The program itself is shown
    read-only when it lies in a hidden directory (an agent CLI installed under the
    user's HOME)."""
    box, proxy = found.proxied(agent=bool(inherit))
    full = dict(os.environ if env is None else env)
    if proxy is not None and inherit:
        _allow_endpoints(proxy, full, inherit)
    box = _fitted(found, box, argv[0], full.get("PATH"), bool(inherit))
    return box, confined_env(full, box, inherit)


def _fitted(found: Confinement, box: Box, program: str, path: str | None, agent: bool) -> Box:
    """`box` as a process of `program` gets it (`agent`: an agent CLI's)."""
    if not agent and box.logins:  # a login file is for the agent CLI alone
        box = replace(box, logins=())
    if agent and found.agent_read_only:  # the workspace too is read-only for it
        box = replace(box, writable=(), readonly=(*box.writable, *box.readonly), rewritable=())
    root = program_root(program, path)
    if root is not None and _hidden(root, box):
        box = replace(box, visible=(*box.visible, root))
    return box


def confine(
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str],
    inherit: Iterable[str] = (),
) -> tuple[list[str], dict[str, str] | None]:
    """`argv` and `env` as the current sandbox starts them, each process in a bwrap of
    its own (unchanged without a sandbox)."""
    found = _current.get()
    if found is None:
        return list(argv), None if env is None else dict(env)
    box, inside = _prepared(found, argv, env, tuple(inherit))
    if isinstance(found.backend, Docker):  # a container of its own, named for its removal
        found.containers.append(f"swell-{os.getpid()}-{next(_containers)}")
        run = inside.get("SWELL_RUN_ID", "")
        return found.backend.run(argv, Path(cwd), box, inside, found.containers[-1], run)
    marks = [target for _, target in box.logins]
    logins.hold(marks)  # its empty mount points go at the visit's end
    found.marks.extend(marks)
    outer, inner = found.limited(list(argv))
    return [*outer, *found.backend.wrap([*inner, *argv], Path(cwd), box)], inside


def start_boxed(
    argv: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str],
    stdio: tuple[int, int, int],
    inherit: tuple[str, ...] = (),
) -> boxes.Boxed | None:
    """`argv` started in the long-lived box of the current visit's shape (sandbox/boxes.py),
    with `stdio` (`inherit`: an agent CLI's own variables, see `confine`); None when it
    must get a bwrap of its own (`confine`): a backend other than bubblewrap, a pids
    limit no lane can hold."""
    found = _current.get()
    if found is None or found.backend.name != "bubblewrap":
        return None
    box, inside = _prepared(found, argv, env, inherit)
    server = found.server(box, inside.get("SWELL_RUN_ID", ""))
    spawner = found.spawner(server)
    if spawner is None:
        return None
    clean = server.take_dirty()
    return spawner.start(argv, os.fspath(cwd), inside, stdio, clean, box.proxy_inside)
