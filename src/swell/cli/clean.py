"""`swell clean`: remove old runs' workspaces (and their git worktrees), their
checkpoints and kept artifact versions."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from swell.cli.common import Output, OutputOption, print_json, run_id_given

if TYPE_CHECKING:
    from swell.runtime import Runtime


def clean(
    ctx: typer.Context,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="DURATION",
            help="Only workspaces of runs that ended longer ago than this (e.g. 7d, 12h).",
        ),
    ] = None,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run",
            metavar="RUN",
            help="Only this run's workspace (also one that could still be resumed).",
            callback=run_id_given,
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")
    ] = False,
    output: OutputOption = Output.text,
) -> None:
    """Remove the workspaces of runs that ended, and their git worktrees, checkpoints
    and kept artifact versions; never those of running runs, nor by default of runs
    that can still be resumed. Runs stay in the history. Says what was removed and how
    much space it freed."""
    from swell.cli.common import runtime
    from swell.manifest.durations import parse_duration
    from swell.ops.clean import human, remove, select
    from swell.ops.clean_checkpoints import Cleaned, forget_runs

    try:
        seconds = parse_duration(older_than) if older_than is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--older-than") from None
    rt = runtime(ctx)
    selection = select(
        rt.store, rt.state_dir, identity=rt.store.identity, older_than=seconds, run_id=run_id
    )
    problems = [] if dry_run else remove(selection, rt.project.root)
    cleaned = Cleaned()
    gone = [r for t in selection.remove for r in t.runs]
    containers = [] if dry_run else _containers(rt, gone)  # what a killed swell left (docker)
    if gone and not dry_run:
        cleaned = forget_runs(rt.state_dir, gone, _executing(rt))
        problems += cleaned.problems
    verb = "would remove" if dry_run else "removed"
    if output is Output.json:
        print_json(
            {
                "dry_run": dry_run,
                "removed": [
                    {
                        "path": str(t.path),
                        "runs": t.runs,
                        "bytes": t.size,
                        "worktrees": [str(w) for w in t.worktrees],
                    }
                    for t in selection.remove
                ],
                "kept": [{"path": str(k.path), "why": k.why} for k in selection.kept],
                "bytes": selection.size,
                "checkpoints": {
                    "runs": cleaned.runs,
                    "refs": cleaned.refs,
                    "versions_bytes": cleaned.versions,
                    "repository_bytes_before": cleaned.before,
                    "repository_bytes_after": cleaned.after,
                },
                "containers": containers,
                "problems": problems,
            }
        )
    else:
        for t in selection.remove:
            owner = t.runs[0] if t.runs else "orphan: no run in the store"
            if len(t.runs) > 1:
                owner += f" and {len(t.runs) - 1} sub-pipeline run(s)"
            trees = f", {len(t.worktrees)} git worktree(s)" if t.worktrees else ""
            print(f"{verb} {t.path.name}  {human(t.size)}  ({owner}{trees})")
        for k in selection.kept:
            print(f"kept {k.path.name}: {k.why}")
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if cleaned.refs or cleaned.versions:
            print(
                f"removed the checkpoints ({cleaned.refs} refs) and kept versions "
                f"({human(cleaned.versions)}) of {len(cleaned.runs)} run(s); checkpoint "
                f"repository {human(cleaned.before)} -> {human(cleaned.after)}"
            )
        if containers:
            print(f"removed {len(containers)} container(s) of these runs: {', '.join(containers)}")
        count = len(selection.remove)
        print(
            f"{verb} {count} workspace{'s' if count != 1 else ''}, "
            f"{'would free' if dry_run else 'freed'} {human(selection.size)}"
        )
    if problems:
        raise typer.Exit(1)


def _containers(rt: Runtime, runs: list[str]) -> list[str]:
    """The removed runs' containers a killed swell left running (docker backend), removed."""
    from swell.sandbox.settings import remove_containers

    return remove_containers(rt.project.manifest.runtime.sandbox, runs)


def _executing(rt: Runtime) -> set[str]:
    """The runs some process executes now."""
    from swell.events.statuses import ENDED_FOR_GOOD
    from swell.ops.clean import SCAN

    runs = rt.store.list_runs(SCAN, include_children=True)
    return {r.id for r in runs if r.status not in ENDED_FOR_GOOD and rt.store.owner(r.id)}
