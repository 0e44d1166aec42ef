"""`swell watch`: start a run for every new item of a work source, exactly once
(service/dispatch.py), until Ctrl-C or SIGTERM."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Annotated

from swell.cli import params as typer  # typer's names, without typer (params.py)
from swell.cli.common import runtime

SourceOption = Annotated[
    str | None,
    typer.Option(
        "--source",
        metavar="URI",
        help="Where work items come from: file:queue.jsonl, dir:PATH, "
        "github:repo=o/r,label=ready,state=open (gh), gitlab:… (glab), gitea:… (tea).",
    ),
]
IntervalOption = Annotated[
    float, typer.Option("--interval", min=0.01, help="Seconds between polls of the source.")
]
MaxConcurrentOption = Annotated[
    int,
    typer.Option(
        "--max-concurrent", min=0, help="Runs of this source going at once (0: no limit)."
    ),
]
OnFailureOption = Annotated[
    str,
    typer.Option(
        "--on-failure",
        metavar="continue|halt",
        help="When a run fails: go on with the next items, or stop dispatching (exit 1).",
    ),
]


def watch(
    ctx: typer.Context,
    pipeline: Annotated[
        str | None,
        typer.Argument(
            help="The pipeline every item runs; without it, runtime.routing picks one per item."
        ),
    ] = None,
    source: SourceOption = None,
    interval: IntervalOption = 30.0,
    max_concurrent: MaxConcurrentOption = 0,
    on_failure: OnFailureOption = "continue",
    engine: Annotated[
        str | None,
        typer.Option("--engine", metavar="ENGINE", help="local or temporal (runtime.engine)."),
    ] = None,
    auto_approve: Annotated[
        bool, typer.Option("--auto-approve", help="Approve every gate with its default choice.")
    ] = False,
    once: Annotated[bool, typer.Option("--once", help="Poll once, then exit.")] = False,
) -> None:
    """Poll a work source and start one run per new item, with the item as its input.

    Each item is started once, whatever happens to this process (docs/service.md);
    started runs go on in processes of their own after it stops. Ctrl-C or SIGTERM
    stops dispatching after the current poll."""
    from swell.service.dispatch import Settings, watch_loop
    from swell.service.watching import dispatchers

    if on_failure not in ("continue", "halt", "skip"):
        raise typer.BadParameter("use continue or halt", param_hint="--on-failure")
    rt = runtime(ctx)
    settings = Settings(
        max_concurrent=max_concurrent,
        on_failure="halt" if on_failure == "halt" else "continue",
        engine=engine or rt.project.manifest.runtime.engine or "local",
        auto_approve=auto_approve,
    )
    found = dispatchers(rt, pipeline, source, settings, _say)
    stop = threading.Event()
    if once:
        stop.set()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    _say(f"watching {', '.join(d.name for d in found)} every {interval:g}s")
    tallies = watch_loop(found, interval, stop)
    started = sum(len(t.started) for t in tallies)
    failed = sum(len(t.failed) for t in tallies)
    halted = any(t.halted for t in tallies)
    _say(f"stopped: {started} runs started, {failed} failed" + (" (halted)" if halted else ""))
    raise typer.Exit(1 if halted else 0)


def _say(line: str) -> None:
    print(line, file=sys.stdout, flush=True)


def wave_continuous(argv: list[str], command: str | None) -> list[str]:
    """Wave's `run PIPELINE --continuous --source URI` is `watch PIPELINE --source URI`."""
    if command != "run" or "--continuous" not in argv:
        return argv
    at = argv.index("run")
    return [*argv[:at], "watch", *(a for a in argv[at + 1 :] if a != "--continuous")]


def route(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(metavar="INPUT", help="The input to route.")],
    label: Annotated[
        list[str] | None,
        typer.Option("--label", metavar="KEY=VALUE", help="A label of the item (repeatable)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show which pipeline runtime.routing picks for INPUT, and which rule matched."""
    import json

    from swell.service.routing import route as choose

    labels: dict[str, str] = {}
    for pair in label or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"`{pair}` is not KEY=VALUE", param_hint="--label")
        labels[key] = value
    chosen = choose(runtime(ctx).project.manifest.runtime.routing, text, labels)
    if json_out:
        print(json.dumps({"pipeline": chosen.pipeline, "rule": chosen.rule, "why": chosen.why}))
    elif chosen.pipeline is None:
        print(f"no pipeline: {chosen.why}")
    else:
        print(f"{chosen.pipeline}  ({chosen.why})")
    raise typer.Exit(0 if chosen.pipeline else 1)
