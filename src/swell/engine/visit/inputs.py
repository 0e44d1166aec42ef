"""What a visit is handed before its kind runs, the way Wave hands it (WAVE.md §3.5,
§3.6): explicit injections at `.agents/artifacts/<as>` (Wave's location; the engine's
copy at `.wave/artifacts/<as>` stays as an alias), every declared output of each
direct dependency at `.agents/artifacts/<dep>/<file>` with an alias at
`.agents/output/<file>`, their paths as `{{ artifacts.<dep>.<name> }}` and
`{{ deps.<dep>.<name> }}`, and for command steps `WAVE_DEP_<DEP>_<NAME>` and
`WAVE_DEPS_DIR`.

Every copy is of the file the run recorded: a regular file whose content still hashes
to the recorded sha256, written without following a link (workspace/safe.py). Unlike
Wave, files are copied, never linked, so a step cannot write through a link into
another step's output.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from swell.engine.visit.context import VisitContext
from swell.events.models import BaseEvent, Warning
from swell.workspace import safe

ARTIFACTS_DIR = ".agents/artifacts"
OUTPUT_ALIAS_DIR = ".agents/output"


@dataclass
class Inputs:
    """What `prepare` did: events to record, problems that fail the visit, and the
    environment a command step adds."""

    events: list[BaseEvent] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def env_name(dep: str, name: str) -> str:
    """`WAVE_DEP_<DEP>_<NAME>`: upper-cased, anything not alphanumeric as `_`."""
    return "WAVE_DEP_" + re.sub(r"[^A-Za-z0-9]", "_", f"{dep}_{name}").upper()


def prepare(ctx: VisitContext) -> Inputs:
    """Hand the visit its inputs (see the module doc). Updates `ctx.namespace` in place
    (`artifacts`, `deps`), so call it before rendering anything. Notes the workspace
    left for this visit (a `subset_from` fallback) become warnings."""
    out = Inputs()
    out.events += [ctx.event(Warning(message=note)) for note in ctx.workspace.notes]
    ctx.workspace.notes.clear()
    arts = ctx.namespace.setdefault("artifacts", {})
    _explicit(ctx, arts, out)
    _dependencies(ctx, arts, out)
    return out


def _copy(ctx: VisitContext, source: str, sha256: str | None, rel: str) -> Path | str:
    """Copy a recorded artifact to `rel` in the workspace: its path, or why not."""
    if sha256 is None or not Path(source).exists():
        return "is not available"
    if safe.is_link(Path(source)):
        return f"({source}) is a symbolic link; not followed"
    try:
        target = safe.place(ctx.workspace.path, rel)
        if target.resolve() == Path(source).resolve():
            return target  # already where it belongs (its own path is the alias)
        safe.copy_verified(Path(source), sha256, target)
    except safe.ContentChanged as exc:
        return f"({source}) changed after it was written ({exc})"
    except safe.UnsafePath as exc:
        return f"cannot be placed at {rel}: {exc}"
    return target


def _explicit(ctx: VisitContext, arts: dict[str, object], out: Inputs) -> None:
    """`memory.inject_artifacts` at Wave's `.agents/artifacts/<as>` too. The engine has
    already copied each to `.wave/artifacts/<as>` and failed the visit for a missing
    required one; this adds Wave's location and makes it the one templates name."""
    for ref in ctx.step.memory.inject_artifacts:
        name = ref.as_ or ref.artifact
        copied = arts.get(name)
        if not isinstance(copied, str):
            continue
        if ref.step:
            source = ctx.state.artifacts.get(ref.step, {}).get(ref.artifact)
            sha256 = ctx.state.artifact_sha256.get(ref.step, {}).get(ref.artifact)
        else:  # another run's output: the engine's checked copy is the source
            source, sha256 = copied, _sha256(Path(copied))
        if source is None:
            continue
        placed = _copy(ctx, source, sha256, f"{ARTIFACTS_DIR}/{name}")
        if isinstance(placed, Path):
            arts[name] = str(placed)
        else:
            message = f"input artifact '{name}' not placed at {ARTIFACTS_DIR}/{name}: {placed}"
            out.events.append(ctx.event(Warning(message=message)))


def _sha256(path: Path) -> str | None:
    try:
        return safe.digest_file(path)[0]
    except (OSError, safe.UnsafePath):
        return None


def _inside(source: str, run_dir: Path) -> bool:
    """Whether `source` is one of swell's own files of the run (under `run_dir`). The
    plain prefix first: it is how swell records them, and resolving costs syscalls at
    every visit of a loop."""
    if source.startswith(f"{run_dir}{os.sep}"):
        return True
    return _real(run_dir) in Path(source).resolve().parents


@functools.lru_cache(maxsize=16)
def _real(path: Path) -> Path:
    return path.resolve()


def _dependencies(ctx: VisitContext, arts: dict[str, object], out: Inputs) -> None:
    steps = {s.id: s for s in ctx.plan.pipeline.pipeline.steps}
    deps: dict[str, dict[str, str]] = {}
    aliases: dict[str, str] = {}  # file name -> the dependency whose copy the alias is
    run_dir = ctx.plan.run_dir
    # an artifact the step injects by name is handed over once: that copy serves as the
    # dependency's too (`as: plan` would otherwise stand where `plan/` goes)
    explicit = {
        (ref.step, ref.artifact): arts.get(ref.as_ or ref.artifact)
        for ref in ctx.step.memory.inject_artifacts
        if ref.step
    }
    for dep in ctx.step.dependencies:
        recorded = ctx.state.artifacts.get(dep, {})
        declared = {a.name: a for a in steps[dep].output_artifacts} if dep in steps else {}
        names = list(declared) + [n for n in recorded if n not in declared]
        for name in names:
            source = recorded.get(name)
            art = declared.get(name)
            if source is None or _inside(source, run_dir):
                # never recorded, or swell's own file of that step (its log, a review)
                if source is None and art is not None and art.required:
                    out.problems.append(
                        f"required artifact '{name}' of dependency '{dep}' is not available "
                        f"(did '{dep}' write it?)"
                    )
                continue
            sha256 = ctx.state.artifact_sha256.get(dep, {}).get(name)
            filename = Path(source).name or name
            given = explicit.get((dep, name))
            if isinstance(given, str):
                placed: Path | str = Path(given)
            else:
                placed = _copy(ctx, source, sha256, f"{ARTIFACTS_DIR}/{dep}/{filename}")
            if not isinstance(placed, Path):
                message = f"artifact '{name}' of dependency '{dep}' {placed}; not injected"
                if art is not None and art.required:
                    out.problems.append(message)
                else:
                    out.events.append(ctx.event(Warning(message=message)))
                continue
            deps.setdefault(dep, {})[name] = str(placed)
            out.env[env_name(dep, name)] = str(placed)
            if filename in aliases and aliases[filename] != dep:
                message = (
                    f"{OUTPUT_ALIAS_DIR}/{filename}: artifacts of '{aliases[filename]}' and "
                    f"'{dep}' share the name; the alias is '{dep}''s "
                    f"({ARTIFACTS_DIR}/<step>/ keeps both)"
                )
                out.events.append(ctx.event(Warning(message=message)))
            aliased = _copy(ctx, source, sha256, f"{OUTPUT_ALIAS_DIR}/{filename}")
            if isinstance(aliased, Path):
                aliases[filename] = dep
    if deps:
        out.env["WAVE_DEPS_DIR"] = str(ctx.workspace.path / ARTIFACTS_DIR)
    ctx.namespace["deps"] = deps
    for dep, found in deps.items():
        # `artifacts.<dep>.<name>`; an explicit injection named like a step keeps its name
        if not isinstance(arts.get(dep), str):
            arts[dep] = {**found}


__all__ = ["ARTIFACTS_DIR", "OUTPUT_ALIAS_DIR", "Inputs", "env_name", "prepare"]
