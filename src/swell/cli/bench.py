"""`swell bench run|report|make`: grade pipelines on tasks (docs/bench.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from swell.cli.common import Output, OutputOption, print_json, runtime
from swell.cli.render import for_terminal

bench = typer.Typer(
    name="bench",
    help="Grade pipelines on SWE-bench-format tasks: `bench run`, `bench report`, `bench make`.",
    add_completion=False,
    no_args_is_help=True,
)


def _say(line: str) -> None:
    print(for_terminal(line), flush=True)


@bench.command("run")
def run(
    ctx: typer.Context,
    dataset: Annotated[
        Path, typer.Argument(help="Tasks, one JSON object a line (SWE-bench format).")
    ],
    pipelines: Annotated[
        list[str],
        typer.Option(
            "--pipeline",
            "-p",
            help="A pipeline to grade (again for more); `gold` and `empty` are the bench's own.",
        ),
    ],
    adapter: Annotated[
        str | None, typer.Option("--adapter", help="Adapter for every prompt step.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Model for every prompt step.")
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-j", min=1, help="Tasks run at once.")
    ] = 1,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first K tasks.")
    ] = None,
    test_timeout: Annotated[
        float, typer.Option("--test-timeout", min=1, help="Seconds a task's tests may take.")
    ] = 600.0,
    bench_id: Annotated[
        str | None,
        typer.Option("--bench", metavar="BENCH", help="Continue this bench (a killed one)."),
    ] = None,
    no_sandbox: Annotated[
        bool, typer.Option("--no-sandbox", help="Run the tasks without runtime.sandbox.")
    ] = False,
    output: OutputOption = Output.text,
) -> None:
    """Run each pipeline on each task in a fresh checkout, then grade its diff alone."""
    import asyncio

    from swell.bench.dataset import load_dataset
    from swell.bench.records import BenchBook, find_bench, new_bench_id
    from swell.bench.report import build_report, report_text
    from swell.bench.runner import BenchInterrupted, BenchOptions, BenchRunner, plan_for
    from swell.engine.visit.sandboxing import check

    data = load_dataset(dataset)
    rt = runtime(ctx)
    check(rt.project.manifest.runtime.sandbox, no_sandbox)
    options = BenchOptions(
        pipelines=list(dict.fromkeys(pipelines)),
        adapter=adapter,
        model=model,
        concurrency=concurrency,
        limit=limit,
        test_timeout=test_timeout,
        no_sandbox=no_sandbox,
    )
    if bench_id is not None:
        bench_id = find_bench(rt.store, bench_id)
        plan = BenchBook(rt.store, bench_id).plan()
        if plan.pipelines != options.pipelines or Path(plan.dataset) != data.path.resolve():
            raise typer.BadParameter(
                f"bench {bench_id} ran {', '.join(plan.pipelines)} on {plan.dataset}",
                param_hint="--bench",
            )
    else:
        plan = plan_for(new_bench_id(), data, options)
    say = _say if output is Output.text else (lambda line: print(line, file=sys.stderr))
    say(f"bench {plan.bench_id}: {len(plan.tasks)} tasks x {len(plan.pipelines)} pipelines")
    runner = BenchRunner(rt, data, plan, say)
    try:
        asyncio.run(runner.run(options))
    except (KeyboardInterrupt, BenchInterrupted):
        print(
            f"continue with: swell bench run {dataset} {_flags(options)} --bench {plan.bench_id}",
            file=sys.stderr,
        )
        raise typer.Exit(130) from None
    report = build_report(rt.store, plan.bench_id)
    if output is Output.json:
        print_json(report.model_dump(mode="json"))
    else:
        print(for_terminal(report_text(report)), end="")


def _flags(options: object) -> str:
    from swell.bench.runner import BenchOptions

    assert isinstance(options, BenchOptions)
    return " ".join(f"--pipeline {p}" for p in options.pipelines)


@bench.command("report")
def report(
    ctx: typer.Context,
    bench_id: Annotated[
        str, typer.Argument(metavar="BENCH", help="A bench id (or prefix, or `latest`).")
    ],
    compare: Annotated[
        str | None,
        typer.Option(
            "--compare", metavar="OTHER", help="Another bench to compare with, task by task."
        ),
    ] = None,
    output: Annotated[
        str,
        typer.Option("--output", "-o", help="text, json, or html (a page with plots)."),
    ] = "text",
) -> None:
    """Resolved rate (with a 95% interval), cost and time per task and per resolved task,
    loops and reviews, and a paired comparison of the pipelines."""
    from swell.bench.html import report_html
    from swell.bench.records import find_bench
    from swell.bench.report import build_report, report_text
    from swell.cli.common import store_runtime

    if output not in ("text", "json", "html"):
        raise typer.BadParameter("text, json or html", param_hint="--output")
    rt = store_runtime(ctx)
    found = build_report(
        rt.store,
        find_bench(rt.store, bench_id),
        other=find_bench(rt.store, compare) if compare else None,
    )
    if output == "json":
        print_json(found.model_dump(mode="json"))
    elif output == "html":
        print(report_html(found), end="")
    else:
        print(for_terminal(report_text(found)), end="")


@bench.command("make")
def make(
    repo_dir: Annotated[Path, typer.Argument(help="A git repository whose tests pass.")],
    out: Annotated[Path, typer.Option("--output-file", "-o", help="The dataset to write (JSONL).")],
    max_tasks: Annotated[
        int, typer.Option("--max-tasks", min=1, help="Keep at most this many.")
    ] = 40,
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="Files to mutate (default: non-test .py files)."),
    ] = None,
    repo_field: Annotated[
        str | None,
        typer.Option("--repo-field", help="What the tasks' `repo` says (default: REPO_DIR)."),
    ] = None,
    test_timeout: Annotated[
        float, typer.Option("--test-timeout", min=1, help="Seconds one test run may take.")
    ] = 300.0,
    test_command: Annotated[
        str | None,
        typer.Option(
            "--test-command",
            help="The tests, run in the project's root with test ids added; pytest's -rA "
            "summary is read ({python}: this Python). Default: pytest in this Python.",
        ),
    ] = None,
) -> None:
    """Build a dataset from mutants of a project: each mutant some test catches is a task
    (its failing tests FAIL_TO_PASS, the others PASS_TO_PASS, the fix its gold patch)."""
    import asyncio

    from swell.bench.make import MakeOptions, make_dataset

    options = MakeOptions(
        max_tasks=max_tasks, sources=source or [], repo_field=repo_field, test_timeout=test_timeout
    )
    if test_command:
        options.test_command = test_command
    tasks = asyncio.run(make_dataset(repo_dir.resolve(), out, options, _say))
    print(f"wrote {len(tasks)} tasks to {out}")
