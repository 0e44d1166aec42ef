"""Our conformance fixture (tests/fixtures/conformance: one pipeline per Wave construct
that Wave's own pipelines use) run through `swell run` with the real Claude Code CLI
against the auto twin, as scripts/wave-e2e runs Wave's own 46 (docs/conformance.md).

Each pipeline runs once per module (`outcomes`); the tests then look at what swell
stored and what the twin saw. Before issue 26's fixes every pipeline here but `gate`
stopped on one of them (`*` permissions, templated persona names and output paths,
run ids redacted, `{{ S.output.FIELD }}`, the cross-pipeline inject type, schemas
missing from prompts).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from wave_harness import Harness, Result, copy_project, fixture_project
from wave_sweep import FIXTURE

from agent_clis import cli_path

pytestmark = [pytest.mark.agent_cli, pytest.mark.slow]

# the pipelines the test runs (the fixture's other pipelines run inside these), and
# whether each step's first review or judge fails, so that its rework or retry runs
PIPELINES = {
    "hello": False,
    "persona-template": False,
    "breakdown-task": False,
    "review-rework": True,
    "implement-rework": True,
    "judge": True,
    "fanout": False,
    "epic": False,
    "branch": False,
    "loop": False,
    "gate": False,
    "inject-parent": False,
    "forge-commands": False,
    "graph": False,
    "templated-output": False,
}
# the pipelines with JSON outputs checked by a json_schema contract
WITH_SCHEMAS = [
    "hello",
    "persona-template",
    "breakdown-task",
    "judge",
    "fanout",
    "epic",
    "branch",
    "loop",
    "inject-parent",
    "forge-commands",
]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Result]:
    """Run a fixture pipeline (once per module) and return what the harness read back."""
    cli_path("claude")  # skip, or fail under SWELL_REQUIRE_AGENT_CLIS=1, without it
    root = tmp_path_factory.mktemp("conformance")
    template = fixture_project(FIXTURE, root / "template")
    done: dict[str, Result] = {}

    def run(pipeline: str) -> Result:
        if pipeline not in done:
            project = copy_project(template, root / f"project-{pipeline}")
            work = root / f"work-{pipeline}"
            with Harness(work, fail_first_review=PIPELINES[pipeline]) as harness:
                done[pipeline] = harness.run(project, pipeline)
        return done[pipeline]

    return run


def describe(result: Result) -> str:
    return (
        f"{result.pipeline}: exit {result.exit_code}, status {result.status}, "
        f"first error: {result.first_error}\ntool errors: {result.tool_errors[:3]}\n"
        f"output:\n{result.output[-2000:]}"
    )


@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_pipeline_reaches_its_end(outcomes: Callable[[str], Result], pipeline: str) -> None:
    result = outcomes(pipeline)
    ended, refused = result.reached_end, result.tool_errors
    assert ended and not refused, describe(result)
    # a contract fails only where the twin was told to fail a review
    assert not result.contract_failures or PIPELINES[pipeline], result.contract_failures


@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_prompts_hold_no_unrendered_placeholder(
    outcomes: Callable[[str], Result], pipeline: str
) -> None:
    assert not outcomes(pipeline).unrendered


@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_listed_input_artifacts_exist_when_the_agent_starts(
    outcomes: Callable[[str], Result], pipeline: str
) -> None:
    assert not outcomes(pipeline).missing_inputs


@pytest.mark.parametrize("pipeline", WITH_SCHEMAS)
def test_json_outputs_come_with_their_schema_in_the_prompt(
    outcomes: Callable[[str], Result], pipeline: str
) -> None:
    """A model is told the contract's schema (Wave appends it to the prompt); the twin
    had to read it from the project when the prompt lacked it."""
    sources = outcomes(pipeline).schema_sources
    assert sources, "no step wrote a JSON output"
    assert all(source == "prompt" for _, source in sources), sources


def test_review_failure_sends_the_work_to_its_rework_step(
    outcomes: Callable[[str], Result],
) -> None:
    result = outcomes("review-rework")
    assert result.tally.failed_verdicts >= 1 and result.tally.reviews >= 2
    assert result.visits_by_step.get("fix-report") == 1, result.visits_by_step


def test_judge_failure_runs_the_step_again(outcomes: Callable[[str], Result]) -> None:
    result = outcomes("judge")
    assert result.tally.judges >= 2 and result.tally.failed_verdicts >= 1
    assert result.visits_by_step.get("assess") == 2, result.visits_by_step


def test_fan_out_runs_each_child_pipeline(outcomes: Callable[[str], Result]) -> None:
    assert sorted(outcomes("fanout").child_pipelines) == ["audit-alpha", "audit-beta"]


def test_branch_runs_the_case_the_step_output_names(outcomes: Callable[[str], Result]) -> None:
    # the twin picks the first enum value of plan.route, "fast"
    assert outcomes("branch").child_pipelines == ["audit-alpha"]


def test_command_steps_call_the_forge_cli(outcomes: Callable[[str], Result]) -> None:
    calls = outcomes("forge-commands").forge_calls
    assert [
        "gh",
        "issue",
        "view",
        "42",
        "--repo",
        "re-cinq/wave",
        "--json",
        "number,title",
    ] in calls


def test_gates_are_approved_with_their_default(outcomes: Callable[[str], Result]) -> None:
    assert outcomes("gate").visits_by_step.get("verify") == 1


# --------------------------------------------------------------------------- other CLIs

# a few pipelines per CLI (CI time): JSON outputs checked by a schema, an injected
# artifact, a commit, a test_suite contract and a failed review's rework
OTHER_CLIS = ["codex", "gemini", "opencode"]
SUBSET = {"hello": False, "implement-rework": True}


@pytest.fixture(scope="module")
def cli_outcomes(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Result]:
    """Run a fixture pipeline under `swell run --adapter CLI` (once per module)."""
    root = tmp_path_factory.mktemp("conformance-clis")
    template = fixture_project(FIXTURE, root / "template")
    done: dict[tuple[str, str], Result] = {}

    def run(cli: str, pipeline: str) -> Result:
        cli_path(cli)
        if (cli, pipeline) not in done:
            project = copy_project(template, root / f"project-{cli}-{pipeline}")
            work = root / f"work-{cli}-{pipeline}"
            with Harness(work, fail_first_review=SUBSET[pipeline], adapter=cli) as harness:
                done[cli, pipeline] = harness.run(project, pipeline)
        return done[cli, pipeline]

    return run


@pytest.mark.parametrize("pipeline", list(SUBSET))
@pytest.mark.parametrize("cli", OTHER_CLIS)
def test_pipeline_reaches_its_end_under_another_cli(
    cli_outcomes: Callable[[str, str], Result], cli: str, pipeline: str
) -> None:
    result = cli_outcomes(cli, pipeline)
    assert result.reached_end and not result.tool_errors, describe(result)
    assert not result.unrendered and not result.missing_inputs
    assert all(source == "prompt" for _, source in result.schema_sources)
    if SUBSET[pipeline]:  # the failed review sent the work back, and the rework passed
        assert result.tally.failed_verdicts >= 1 and result.tally.reviews >= 2
        assert result.tally.commits >= 1
