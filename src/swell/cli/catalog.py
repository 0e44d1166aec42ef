"""`swell list [runs|pipelines|personas|adapters]`: what a project has."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Annotated, Any

from swell.cli import params as typer  # typer's names, without typer (params.py)
from swell.cli.common import Output, OutputOption, print_json, project_dir

if TYPE_CHECKING:
    from swell.manifest.loader import Project
    from swell.registries import Registries


class What(enum.StrEnum):
    runs = "runs"
    pipelines = "pipelines"
    personas = "personas"
    adapters = "adapters"


def list_(
    ctx: typer.Context,
    what: Annotated[
        What,
        typer.Argument(
            metavar="[runs|pipelines|personas|adapters]",
            help="runs (the default: newest first), pipelines (with their validation "
            "state), personas (adapter and model), or adapters (type, binary found or not).",
        ),
    ] = What.runs,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", min=1, max=1_000_000, help="How many runs to show (list runs)."
        ),
    ] = 20,
    output: OutputOption = Output.text,
) -> None:
    """Runs (newest first), or the project's pipelines, personas or adapters."""
    if what is What.runs:
        from swell.cli.inspect import list_runs

        list_runs(ctx, limit=limit, output=output)
        return
    from swell.manifest.loader import load_project
    from swell.registries import open_registries

    project = load_project(project_dir(ctx))
    registries = open_registries()
    rows = {
        What.pipelines: _pipelines,
        What.personas: _personas,
        What.adapters: _adapters,
    }[what](project, registries)
    if output is Output.json:
        print_json(rows)
        return
    if not rows:
        print(f"no {what.value} in {project.manifest_path.name}")
        return
    _table(rows, _COLUMNS[what])


_COLUMNS = {
    What.pipelines: ("name", "state", "steps", "description"),
    What.personas: ("name", "adapter", "model", "description"),
    What.adapters: ("name", "type", "binary", "source"),
}


def _table(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    cells = [[str(row.get(c) if row.get(c) is not None else "-") for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def _short(text: str | None, limit: int = 60) -> str | None:
    if not text:
        return None
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _pipelines(project: Project, registries: Registries) -> list[dict[str, Any]]:
    from swell.errors import ManifestError, Problem, SwellError
    from swell.manifest.lint import lint_pipeline
    from swell.manifest.loader import load_pipeline, pipeline_paths

    lint_ctx = registries.lint_context()
    rows = []
    for name, path in sorted(pipeline_paths(project.root).items()):
        problems: list[Problem] = []
        steps, description = None, None
        try:
            loaded = load_pipeline(project.root, name)
            problems = lint_pipeline(project, loaded, lint_ctx).problems
            steps = len(loaded.pipeline.steps)
            description = loaded.pipeline.metadata.description
        except ManifestError as exc:
            problems = list(exc.problems)
        except SwellError as exc:
            problems = [Problem(name, 0, 0, str(exc))]
        errors = [p for p in problems if p.severity == "error"]
        warnings = len(problems) - len(errors)
        state = f"{len(errors)} error{'s' if len(errors) != 1 else ''}" if errors else "ok"
        if warnings:
            state += f" ({warnings} warning{'s' if warnings != 1 else ''})"
        rows.append(
            {
                "name": name,
                "path": str(path.relative_to(project.root)),
                "ok": not errors,
                "errors": len(errors),
                "warnings": warnings,
                "state": state,
                "steps": steps,
                "description": _short(description),
                "problems": [str(p) for p in problems],
            }
        )
    return rows


def _personas(project: Project, registries: Registries) -> list[dict[str, Any]]:
    from swell.ops.preflight import resolve_model

    rows = []
    for name, persona in sorted(project.manifest.personas.items()):
        adapter = persona.adapter
        model = resolve_model(project, adapter, persona.model) if adapter else persona.model
        rows.append(
            {
                "name": name,
                "adapter": adapter,
                "adapter_type": project.manifest.adapter_type(adapter) if adapter else None,
                "model": model or "(adapter default)",
                "allowed_tools": persona.permissions.allowed_tools,
                "description": _short(persona.description),
            }
        )
    return rows


def _adapters(project: Project, registries: Registries) -> list[dict[str, Any]]:
    from swell.ops import toolchain

    manifest = project.manifest
    names = list(manifest.adapters) + [n for n in registries.adapters if n not in manifest.adapters]
    rows = []
    for name in names:
        type_name = manifest.adapter_type(name)
        known = toolchain.factory_of(registries.adapters, type_name) is not None
        binary = toolchain.binary_for(project.root, manifest, name, registries.adapters)
        if not known:
            shown, found = f"unknown type '{type_name}'", False
        elif binary is None:
            shown, found = "(none: runs in process)", True
        elif binary.path:
            shown, found = f"{binary.path}", True
        else:
            shown, found = f"not found: {binary.wanted}", False
        rows.append(
            {
                "name": name,
                "type": type_name,
                "binary": shown,
                "found": found,
                "source": "wave.yaml" if name in manifest.adapters else "built-in",
            }
        )
    return rows
