"""`swell doctor`: can this machine run the project?"""

from __future__ import annotations

from dataclasses import asdict

import typer

from swell.cli.common import Output, OutputOption, print_json, project_dir

MARK = {"ok": "ok", "missing": "MISSING", "error": "ERROR", "unused": "-"}


def doctor(ctx: typer.Context, output: OutputOption = Output.text) -> None:
    """Check the agent CLIs, API keys, the local model, git and the store the project
    needs; each line says ok, or what is missing and how to fix it. Exit 1 when
    something the project uses is missing."""
    from swell.errors import SwellError
    from swell.manifest.loader import Project, load_project
    from swell.ops.doctor import failed, run_checks
    from swell.registries import open_registries

    project: Project | None = None
    error: SwellError | None = None
    try:
        project = load_project(project_dir(ctx))
    except SwellError as exc:
        error = exc
    checks = run_checks(project, open_registries(), error)
    bad = failed(checks)
    if output is Output.json:
        print_json({"ok": not bad, "checks": [{**asdict(c), "failed": c.failed} for c in checks]})
    else:
        area_width = max(len(c.area) for c in checks)
        name_width = max(len(c.name) for c in checks)
        for c in checks:
            print(
                f"{MARK[c.status]:<7}  {c.area:<{area_width}}  {c.name:<{name_width}}  {c.detail}"
            )
            if c.status != "ok" and c.fix:
                print(f"{'':<7}  {'':<{area_width}}  {'':<{name_width}}  fix: {c.fix}")
        count = sum(c.failed for c in checks)
        print(
            f"\n{count} problem{'s' if count != 1 else ''} found"
            if bad
            else "\neverything this project uses is here"
        )
    if bad:
        raise typer.Exit(1)
