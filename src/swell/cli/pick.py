"""Which run a command means: the one named (a unique prefix is enough), else the newest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from swell.cli import params as typer  # typer's names, without typer (params.py)
from swell.cli.common import run_id_given

if TYPE_CHECKING:
    from swell.store.protocols import RunReader
    from swell.store.rows import RunRow

OptionalRunArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="[RUN]",
        help="Run id (a unique prefix is enough); default: the newest run.",
        callback=run_id_given,
    ),
]


def run_or_newest(store: RunReader, run_id: str | None) -> RunRow:
    """The run `run_id` names, else the newest top-level run (RunNotFound if none)."""
    from swell.errors import RunNotFound

    if run_id is not None:
        return store.get_run(run_id)
    runs = store.list_runs(1, include_children=False)
    if not runs:
        raise RunNotFound("no runs yet (start one with `swell run PIPELINE`)")
    return runs[0]
