"""The cost ledger (`runtime.cost`) and the stall watchdog (`runtime.stall_timeout`),
driven through the engine with the scripted adapter's usage numbers and delays."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Harness, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

MANIFEST = """\
kind: WaveManifest
adapters:
  scripted:
    options: {{script: replies.yaml, calls: calls.jsonl}}
personas:
  dev: {{adapter: scripted, model: {model}}}
runtime:
{runtime}
"""

TWO_STEPS = """
kind: WavePipeline
steps:
  - id: plan
    persona: dev
    exec: {source: "Plan it."}
  - id: build
    persona: dev
    dependencies: [plan]
    exec: {source: "Build it."}
  - id: ship
    persona: dev
    dependencies: [build]
    exec: {source: "Ship it."}
"""


def project(h: Harness, runtime: str, model: str = "claude-sonnet-4-5") -> None:
    h.manifest(MANIFEST.format(model=model, runtime=runtime or "  max_concurrency: 4"))
    h.pipeline(TWO_STEPS)


def usage(tokens_in: int, tokens_out: int, cost: float | None = None) -> dict[str, Any]:
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost}


def reply(step: str, **fields: Any) -> dict[str, Any]:
    return {"step": step, "text": f"{step} done", **fields}


# ------------------------------------------------------------------ cost


def test_a_visit_is_priced_by_its_model_unless_the_adapter_reports_a_cost(h: Harness) -> None:
    project(h, "")
    h.replies(
        [
            # claude-sonnet-4-5 is priced as claude-sonnet: $3 in, $15 out per million
            reply("plan", usage=usage(1_000_000, 100_000)),
            reply("build", usage=usage(5_000, 1_000, cost=0.02)),  # the adapter's own figure
            reply("ship", usage=usage(0, 0)),
        ]
    )
    result = h.run()
    assert result.status == "succeeded", result.error
    finished = {e.step_id: e for e in result.of(ev.StepFinished)}
    assert finished["plan"].cost_usd == pytest.approx(4.5)
    assert finished["build"].cost_usd == pytest.approx(0.02)
    assert finished["ship"].cost_usd == 0.0
    assert {(e.adapter, e.model) for e in finished.values()} == {("scripted", "claude-sonnet-4-5")}
    assert result.state.cost_usd == pytest.approx(4.52)
    assert not result.of(ev.BudgetWarning)  # no `runtime.cost`: nothing to warn about


def test_a_model_outside_the_table_costs_nothing(h: Harness) -> None:
    project(h, "", model="my-local-llm")
    h.replies([reply(s, usage=usage(1_000_000, 1_000_000)) for s in ("plan", "build", "ship")])
    result = h.run()
    assert [e.cost_usd for e in result.of(ev.StepFinished)] == [0.0, 0.0, 0.0]


def test_warn_at_gives_one_warning_when_the_total_first_reaches_it(h: Harness) -> None:
    project(h, "  cost: {enabled: true, warn_at: 1.0}")
    # $0.60 a visit: the total reaches $1 at the second, passes it again at the third
    h.replies([reply(s, usage=usage(200_000, 0)) for s in ("plan", "build", "ship")])
    result = h.run()
    assert result.status == "succeeded", result.error
    (warning,) = result.of(ev.BudgetWarning)
    assert (warning.step_id, warning.visit) == ("build", 1)
    assert warning.spent_usd == pytest.approx(1.2)
    assert warning.message == ("the run has spent $1.2000, past runtime.cost.warn_at $1.0000")
    types = result.types()
    assert (
        types.index("budget.warning")
        == types.index("step.finished", types.index("step.finished") + 1) + 1
    )


def test_the_ceiling_stops_the_next_step_and_fails_the_run(h: Harness) -> None:
    project(h, "  cost: {budget_ceiling: 1.0}")  # a ceiling turns the ledger on alone
    h.pipeline(
        TWO_STEPS.replace(
            'exec: {source: "Build it."}',
            'exec: {source: "Build it."}\n    retry: {max_attempts: 3}',
        )
    )
    h.replies(
        [
            reply("plan", usage=usage(100_000, 0)),  # $0.30
            reply("build", usage=usage(300_000, 0)),  # $0.90: $1.20 in all
            reply("ship"),
        ]
    )
    result = h.run()
    assert result.status == "failed"
    assert result.error == (
        "budget exceeded: the run has spent $1.2000, reaching runtime.cost.budget_ceiling "
        "$1.0000; step 'ship' was not started"
    )
    assert [v[0] for v in result.visits()] == ["plan", "build"]  # ship never started
    (stopped,) = result.of(ev.BudgetExceeded)
    assert (stopped.step_id, stopped.spent_usd, stopped.ceiling) == ("ship", 1.2, 1.0)
    assert not result.of(ev.RetryRequested)  # spending more cannot help
    assert len(h.calls()) == 2


def test_the_spend_survives_a_resume(h: Harness) -> None:
    project(h, "  cost: {budget_ceiling: 1.0}")
    h.replies(
        [
            reply("plan", usage=usage(200_000, 0)),  # $0.60
            reply("build", usage=usage(200_000, 0)),  # lost with the process
            reply("build", usage=usage(200_000, 0)),  # run again: $1.20 in all
            reply("ship"),
        ]
    )
    # the process dies while `build` runs (after 10 stored batches, `plan` is done)
    first = h.run(crash_after=10)
    assert first.crashed
    assert first.state.cost_usd == pytest.approx(0.6)
    resumed = h.resume(first.run_id)
    assert resumed.status == "failed"
    assert "spent $1.2000" in (resumed.error or "")
    assert "step 'ship' was not started" in (resumed.error or "")


# ------------------------------------------------------------------ stall


STALL_STEP = """
kind: WavePipeline
steps:
  - id: work
    persona: dev
    exec: {source: "Work."}
"""


def stall_project(h: Harness, timeout: str, retry: str = "") -> None:
    h.manifest(MANIFEST.format(model="m", runtime=f"  stall_timeout: {timeout}"))
    h.pipeline(STALL_STEP + retry)


def test_an_agent_silent_for_the_stall_timeout_is_stopped_and_the_step_fails(
    h: Harness,
) -> None:
    stall_project(h, "500ms")
    h.replies([reply("work", delay=30)])
    result = h.run()
    assert result.status == "failed"
    (finished,) = result.of(ev.StepFinished)
    assert finished.error == (
        "timeout: stalled: no output or events from the agent for 500ms "
        "(runtime.stall_timeout: 500ms); the agent was stopped"
    )
    assert finished.duration_ms < 10_000  # not the 30 s the agent would have taken


def test_a_stalled_attempt_is_retried_under_the_steps_retry_policy(h: Harness) -> None:
    stall_project(h, "500ms", "    retry: {max_attempts: 2, base_delay: 0}\n")
    h.replies([reply("work", delay=30), reply("work", text="finished")])
    result = h.run()
    assert result.status == "succeeded", result.error
    warnings = [e.message for e in result.of(ev.Warning)]
    assert any(m.startswith("stalled: no output or events") for m in warnings), warnings
    assert any(m.startswith("timeout: retrying in 0s (attempt 2)") for m in warnings), warnings
    assert len(h.calls()) == 2


def reading(seconds: float, tool: str) -> dict[str, Any]:
    return {"tool_call": {"name": tool, "target": "src/"}, "delay": seconds}


def test_only_reading_is_no_progress(h: Harness) -> None:
    stall_project(h, "1s")
    # busy all the time, but only reading: the progress timer runs out
    h.replies([reply("work", turns=[reading(0.3, "Read") for _ in range(12)])])
    result = h.run()
    assert result.status == "failed"
    (finished,) = result.of(ev.StepFinished)
    assert "stalled: no progress for 1s (no tool call other than reading or searching)" in (
        finished.error or ""
    )


def test_an_agent_that_keeps_changing_things_is_not_stalled(h: Harness) -> None:
    stall_project(h, "1s")
    h.replies([reply("work", turns=[reading(0.3, "Edit") for _ in range(6)])])
    result = h.run()
    assert result.status == "succeeded", result.error
