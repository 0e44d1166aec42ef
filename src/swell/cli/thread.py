"""`swell thread RUN`: a run's history, page by page, within a character budget."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from swell.cli.common import (
    Output,
    OutputOption,
    RunPrefixArgument,
    print_json,
    project_dir,
)
from swell.cli.render import for_terminal

MAX_BUDGET = 100_000_000  # characters: a page past this is no page to read
MAX_ROUND = 2**62  # a round id (the store's integers end at 2**63)


def thread(
    ctx: typer.Context,
    run_id: RunPrefixArgument,
    thread_name: Annotated[
        str | None,
        typer.Option("--thread", help="One thread of the run; round ids are the thread's own."),
    ] = None,
    budget: Annotated[
        int,
        typer.Option("--budget", min=1, max=MAX_BUDGET, help="Characters to print at most."),
    ] = 8000,
    before: Annotated[
        int | None,
        typer.Option(
            "--before", min=1, max=MAX_ROUND, help="Rounds before this id (the hint's value)."
        ),
    ] = None,
    output: OutputOption = Output.text,
) -> None:
    """Print a run's rounds: the first, then the newest that fit the budget."""
    # kept light on purpose: agents call this in their loops, so no manifest loading
    from swell.store.location import open_project_store
    from swell.threads.retrieval import page_json, page_text, retrieve

    store = open_project_store(project_dir(ctx))
    run = store.get_run(run_id)
    page = retrieve(store, run.id, thread_name, budget, before)
    if output is Output.json:
        print_json(page_json(page))
    elif page.total == 0:
        what = f"thread '{thread_name}' of run {run.id}" if thread_name else f"run {run.id}"
        print(f"no rounds in {what} yet", file=sys.stderr)
    else:
        sys.stdout.write(for_terminal(page_text(page)))  # agents wrote the rounds
