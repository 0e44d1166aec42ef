"""Run every pipeline of a Wave-format project through the harness, one after another,
and write the results table as it goes (`scripts/wave-e2e` is the command).

Wave's own pipelines: `SWELL_WAVE_REPO=/path/to/wave scripts/wave-e2e`. Our fixture
project: `scripts/wave-e2e --fixture`. See docs/conformance.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from wave_harness import (
    ADAPTERS,
    TABLE_HEAD,
    WAVE_COMMIT,
    WAVE_ENV,
    Harness,
    Result,
    WaveCheckoutError,
    agent_cli_bin,
    copy_project,
    fixture_project,
    pipelines,
    wave_checkout,
    wave_project,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "conformance"


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/wave-e2e", description=__doc__)
    parser.add_argument("pipelines", nargs="*", help="only these pipelines (default: all)")
    parser.add_argument("--fixture", action="store_true", help="run tests/fixtures/conformance")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) to this file")
    parser.add_argument("--work", type=Path, help="scratch directory (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep each run's project")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per pipeline")
    parser.add_argument(
        "--fail-first-review",
        action="store_true",
        help="each step's first review or judge fails (rework and retry paths run)",
    )
    parser.add_argument("--swell-src", type=Path, help="the swell sources to run (default: ours)")
    parser.add_argument(
        "--adapter",
        choices=list(ADAPTERS),
        default="claude",
        help="the agent CLI every persona runs on (`swell run --adapter`; default: claude)",
    )
    parser.add_argument(
        "--sandbox",
        action="store_true",
        default=os.environ.get("SWELL_WAVE_SANDBOX") == "1",
        help="runtime.sandbox.enabled: true in each project's wave.yaml (SWELL_WAVE_SANDBOX=1)",
    )
    return parser.parse_args(argv)


def report(results: list[Result], total: int, title: str) -> str:
    done = sum(r.reached_end for r in results)
    lines = [
        f"# {title}",
        "",
        f"{done}/{len(results)} reached their end ({len(results)} of {total} run so far).",
        "",
        TABLE_HEAD,
        *(r.row() for r in results),
        "",
        "## Details",
    ]
    for r in results:
        from_project = [path for path, source in r.schema_sources if source == "project"]
        if (
            r.reached_end
            and not (r.unrendered or r.missing_inputs or r.tool_errors or r.contract_failures)
            and not from_project
        ):
            continue
        lines += ["", f"### {r.pipeline} ({r.status}, run {r.run_id})", ""]
        lines.append(f"- first error: {r.first_error or '(none)'}")
        if from_project:
            lines.append(f"- JSON outputs whose schema was not in the prompt: {from_project}")
        if r.unrendered:
            lines.append(f"- unrendered placeholders: {sorted(set(r.unrendered))[:10]}")
        if r.missing_inputs:
            lines.append(
                f"- input artifacts missing when the agent started: {r.missing_inputs[:10]}"
            )
        if r.contract_failures:
            lines.append(
                f"- contract failures ({len(r.contract_failures)}): {r.contract_failures[0][:240]}"
            )
        if r.tool_errors:
            lines.append(f"- tool errors ({len(r.tool_errors)}): {r.tool_errors[0][:240]}")
        t = r.tally
        lines.append(
            f"- twin: {t.agent_calls} model calls, {t.files_written} files written, schemas "
            f"from prompt {t.schemas_from_prompt} / read from project {t.schemas_from_project}"
            f" / none {t.schemas_missing}, reviews {t.reviews}, judges {t.judges}, "
            f"commits {t.commits}; forge calls {len(r.forge_calls)}; child runs {r.child_runs}"
        )
    return "\n".join(lines) + "\n"


def swell_commit(src: Path | None) -> str:
    """The commit of the swell sources that run (a dirty tree is marked)."""
    where = src or Path(__file__).resolve().parents[2]
    head = subprocess.run(
        ["git", "-C", str(where), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    )
    return head.stdout.strip() or "(not a git checkout)"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    cli = ADAPTERS[args.adapter][0]
    if not (agent_cli_bin() / cli).exists():
        print(f"{cli} is not installed in {agent_cli_bin()}: run scripts/install-agent-clis.sh")
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="swell-wave-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    template = work / "template"
    if template.exists():
        shutil.rmtree(template)
    if args.fixture:
        fixture_project(FIXTURE, template)
        title = f"Conformance fixture pipelines through swell with {cli}"
    else:
        repo = wave_checkout()
        if repo is None:
            print(f"{WAVE_ENV} is not set: point it at a checkout of re-cinq/wave at {WAVE_COMMIT}")
            return 2
        try:
            wave_project(repo, template)
        except WaveCheckoutError as exc:
            print(exc)
            return 2
        title = f"Wave's pipelines (re-cinq/wave {WAVE_COMMIT}) through swell with {cli}"
    title += f", swell {swell_commit(args.swell_src)}"
    names = args.pipelines or pipelines(template)
    if args.fail_first_review:
        title += ", each step's first review or judge failing"
    if args.sandbox:
        title += ", sandboxed (runtime.sandbox.enabled: true)"
    harness = Harness(
        work,
        fail_first_review=args.fail_first_review,
        timeout_s=args.timeout,
        swell_src=args.swell_src,
        adapter=args.adapter,
        sandbox=args.sandbox,
    )
    results: list[Result] = []
    print(TABLE_HEAD, flush=True)
    with harness:
        for name in names:
            project = copy_project(template, work / f"project-{name}")
            result = harness.run(project, name)
            results.append(result)
            print(result.row(), flush=True)
            if args.out:
                args.out.write_text(report(results, len(names), title))
            if not args.keep:
                shutil.rmtree(project, ignore_errors=True)
    done = sum(r.reached_end for r in results)
    print(f"\n{done}/{len(results)} reached their end", flush=True)
    if not args.work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if done == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
