"""The workspaces of one run: created on first use, found again on resume."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from swell.manifest.models import Mount, Step, WorkspaceConfig, branch_problem
from swell.workspace import seeds
from swell.workspace.checkpoint import Checkpoints, Memory, repo_of
from swell.workspace.mounts import SubsetError, subset_paths
from swell.workspace.paths import PathEscape, inside
from swell.workspace.workspace import (
    Workspace,
    WorkspaceError,
    add_mounts,
    branch_exists,
    mount_target,
    open_directory,
    open_worktree,
    restore_mounts,
)

DEFAULT_BRANCH = "swell/{{ run.id }}"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")  # a name a template path can spell


def workspace_config(steps: dict[str, Step], step: Step) -> WorkspaceConfig | None:
    """The step's `workspace:`, following `ref: STEP` to the step that defines it;
    raises WorkspaceError when a ref leads nowhere (or in a circle)."""
    config = step.workspace
    seen: set[str] = set()
    while config is not None and config.ref:
        if config.ref in seen or config.ref not in steps:
            raise WorkspaceError(
                f"step '{step.id}': workspace.ref '{config.ref}' does not lead to a step"
            )
        seen.add(config.ref)
        config = steps[config.ref].workspace
    return config


def script_dir(workspace: Path, config: WorkspaceConfig | None) -> Path:
    """Where a command step's script runs: as in Wave, the target of the step's first
    mount of the project itself (`source: ./` or `.`), else the workspace."""
    for mount in config.mount if config is not None else []:
        if mount.source.strip() in (".", "./", ""):
            target = mount_target(mount)
            return workspace if target == "." else workspace / target
    return workspace


@dataclass
class Opened:
    """A step's workspace, opened, with the mounts still to copy into it (`mount`)."""

    workspace: Workspace
    mounts: list[Mount] = field(default_factory=list)
    subsets: dict[int, list[str]] = field(default_factory=dict)


class Workspaces:
    """Step → workspace. Steps without `workspace:` share the run's directory; steps
    naming the same worktree branch share that worktree; `ref: STEP` borrows another
    step's workspace."""

    def __init__(
        self,
        project_root: Path,
        default: Path,
        steps: dict[str, Step],
        run_dir: Path | None = None,
    ) -> None:
        self.project_root = project_root
        self.default = default
        self.steps = steps
        self.run_dir = run_dir  # STATE/runs/RUN: a fork's worktrees are seeded from it
        self._by_key: dict[str, Workspace] = {}
        self._copying = threading.Lock()  # mounts are copied in threads (`mount`)
        # what the run's process knows of its workspaces' checkpoints (their stat caches)
        self.checkpoints = Memory()

    def for_step(self, step: Step, render: Callable[[str], str]) -> Workspace:
        """The workspace `step` runs in, its mounts copied; raises WorkspaceError when
        it cannot be made."""
        opened = self.open(step, render)
        self.mount(opened)
        return opened.workspace

    def open(self, step: Step, render: Callable[[str], str]) -> Opened:
        """The workspace `step` runs in and what to copy into it, without copying:
        `mount` does that, which may take seconds (a `./` mount of a big project), so
        a visit runs it off the event loop. `render` is only called here."""
        config = workspace_config(self.steps, step)
        if config is not None and config.type == "worktree":
            branch = render(config.branch or DEFAULT_BRANCH)
            problem = branch_problem(branch)
            if problem:  # a template rendered into something that is no branch
                raise WorkspaceError(f"step '{step.id}': worktree branch {branch!r} {problem}")
            key = f"worktree:{branch}"
            if key not in self._by_key:
                own = self._own_branch(branch)
                made = open_worktree(self.project_root, self.default, own, config.base)
                self._seed(made, config)
                self._by_key[key] = made
        else:
            key = "directory"
            if key not in self._by_key:
                self._by_key[key] = open_directory(self.default)
        workspace = self._by_key[key]
        if config is None or not config.mount:
            return Opened(workspace)
        subsets = self._subsets(step, config.mount, render, workspace)
        return Opened(workspace, list(config.mount), subsets)

    def _own_branch(self, branch: str) -> str:
        """The branch a worktree is on: `branch`, except in a fork whose origin made it
        already (a name not built from the run id): git keeps a branch in one worktree,
        and the origin's holds the origin's commits, so the fork's is
        `BRANCH-fork-RUN` (docs/time-travel.md)."""
        run_dir = self.run_dir
        if run_dir is None or not seeds.seeds_path(run_dir).is_file():
            return branch
        if not branch_exists(self.project_root, branch):
            return branch
        return f"{branch}-fork-{run_dir.name}"

    def _seed(self, made: Workspace, config: WorkspaceConfig) -> None:
        """A fork's worktree, first opened, holds its origin's at the fork point
        (workspace/seeds.py). The steps sharing it are those with its branch template."""
        run_dir = self.run_dir
        if run_dir is None or not seeds.seeds_path(run_dir).is_file():
            return
        sharing = [
            s.id
            for s in self.steps.values()
            if (c := workspace_config(self.steps, s)) is not None
            and c.type == "worktree"
            and (c.branch, c.base) == (config.branch, config.base)
        ]
        repo = Checkpoints(repo_of(run_dir.parent.parent), self.checkpoints)
        seeds.plant(repo, run_dir, self.default, made.path, sharing)

    def mount(self, opened: Opened) -> None:
        """Copy the mounts `open` found into the workspace. Safe from any thread: one
        copy at a time, so visits sharing a workspace never copy the same mount twice
        (the second finds it done)."""
        if not opened.mounts:
            return
        with self._copying:
            add_mounts(opened.workspace, self.project_root, opened.mounts, subsets=opened.subsets)

    def _subsets(
        self, step: Step, mounts: list[Mount], render: Callable[[str], str], ws: Workspace
    ) -> dict[int, list[str]]:
        """The files each `subset_from` mount copies (mount index -> paths).

        `subset_from: STEP.ARTIFACT[.json.path]`: the artifact is read where the run
        recorded it (the manager sees the run only through `render`, the template
        namespace, so it asks for `steps.STEP.artifacts.ARTIFACT`). As in Wave, an
        artifact that is not there keeps the whole source (with a note); a path that
        gives no list of paths fails the visit. Listed paths that leave the source,
        are links or do not exist are left out, with a note."""
        found: dict[int, list[str]] = {}
        done = {m.target for m in ws.mounts}
        for index, mount in enumerate(mounts):
            if not mount.subset_from or mount_target(mount) in done:
                continue
            producer, _, rest = mount.subset_from.partition(".")
            name, _, path = rest.partition(".")
            what = f"step '{step.id}': subset_from {mount.subset_from!r}"
            artifact = ""
            if _NAME.fullmatch(producer) and _NAME.fullmatch(name):
                artifact = render(f"{{{{ steps.{producer}.artifacts.{name} }}}}")
            if not artifact or not Path(artifact).is_file():
                ws.notes.append(
                    f"{what}: artifact '{name}' of step '{producer}' is not available; "
                    "copying the whole source"
                )
                continue
            try:
                source = inside(self.project_root, mount.source.removeprefix("./") or ".")
                kept, left = subset_paths(Path(artifact), path, source)
            except (PathEscape, SubsetError) as exc:
                raise WorkspaceError(f"{what}: {exc}") from None
            if left:
                ws.notes.append(
                    f"{what}: not copied (outside the source, links or missing): " + ", ".join(left)
                )
            found[index] = kept
        return found

    def after_visit(self, workspace: Workspace) -> list[str]:
        """Problems a visit left (writes into read-only mounts, which are undone)."""
        problems = workspace.check_mounts()
        if problems:
            with self._copying:
                restore_mounts(workspace, self.project_root)
        return problems


__all__ = ["Opened", "WorkspaceError", "Workspaces", "script_dir", "workspace_config"]
