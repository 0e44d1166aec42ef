"""The workspaces of one run: created on first use, found again on resume."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from swell.manifest.models import Step, branch_problem
from swell.workspace.workspace import (
    Workspace,
    WorkspaceError,
    add_mounts,
    open_directory,
    open_worktree,
    restore_mounts,
)

DEFAULT_BRANCH = "swell/{{ run.id }}"


class Workspaces:
    """Step → workspace. Steps without `workspace:` share the run's directory; steps
    naming the same worktree branch share that worktree; `ref: STEP` borrows another
    step's workspace."""

    def __init__(self, project_root: Path, default: Path, steps: dict[str, Step]) -> None:
        self.project_root = project_root
        self.default = default
        self.steps = steps
        self._by_key: dict[str, Workspace] = {}

    def for_step(self, step: Step, render: Callable[[str], str]) -> Workspace:
        """The workspace `step` runs in; raises WorkspaceError when it cannot be made."""
        config = step.workspace
        seen: set[str] = set()
        while config is not None and config.ref:
            if config.ref in seen or config.ref not in self.steps:
                raise WorkspaceError(
                    f"step '{step.id}': workspace.ref '{config.ref}' does not lead to a step"
                )
            seen.add(config.ref)
            config = self.steps[config.ref].workspace
        if config is not None and config.type == "worktree":
            branch = render(config.branch or DEFAULT_BRANCH)
            problem = branch_problem(branch)
            if problem:  # a template rendered into something that is no branch
                raise WorkspaceError(f"step '{step.id}': worktree branch {branch!r} {problem}")
            key = f"worktree:{branch}"
            if key not in self._by_key:
                self._by_key[key] = open_worktree(
                    self.project_root, self.default, branch, config.base
                )
        else:
            key = "directory"
            if key not in self._by_key:
                self._by_key[key] = open_directory(self.default)
        workspace = self._by_key[key]
        if config is not None and config.mount and not workspace.mounts:
            add_mounts(workspace, self.project_root, config.mount)
        return workspace

    def after_visit(self, workspace: Workspace) -> list[str]:
        """Problems a visit left (writes into read-only mounts, which are undone)."""
        problems = workspace.check_mounts()
        if problems:
            restore_mounts(workspace, self.project_root)
        return problems


__all__ = ["WorkspaceError", "Workspaces"]
