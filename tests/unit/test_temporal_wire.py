"""The Temporal wire carries the engine's own models: a visit's `StepResult`, every
field of it set, crosses the data converter that clients, workers and replayers use
and comes back equal, its events each as their own kind."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from swell.engine.loop.policies import ContractFailure
from swell.engine.visit.context import StepResult
from swell.events import models as ev
from swell.executors.temporal.client import data_converter
from swell.executors.temporal.specs import VisitReply
from swell.manifest.models import Step


def _full_result() -> StepResult:
    owner = Step.model_validate(
        {"id": "produce", "script": "make", "retry": {"max_attempts": 2, "rework_step": "fix"}}
    )
    feedback = ev.ReviewFeedback(verdict="rework", summary="thin", confidence=0.4)
    return StepResult(
        outcome="failure",
        error="contract 1 (agent_review) of step 'produce' failed: thin",
        exit_code=2,
        output_tail="tail",
        outputs={"exit_code": 2, "stdout": "out", "json": {"a": [1, None, "x"]}},
        stdout="out",
        events=[
            ev.Warning(message="careful", step_id="produce", visit=1),
            ev.ArtifactWritten(name="plan", path="/w/plan.md", sha256="ab", size=3),
            ev.ContextSet(key="passed", value="false"),
        ],
        choice_key="ship",
        choice_target="after",
        tokens_in=10,
        tokens_out=20,
        cost_usd=0.25,
        adapter="claude",
        outputs_dir=Path("/w/scripts"),
        model="sonnet",
        failure=ContractFailure(
            policy="rework",
            index=0,
            contract_type="agent_review",
            error="thin",
            owner=owner,
            rework_step="fix",
            reviewer="critic",
            feedback=feedback,
            feedback_path="/runs/r/produce/1/review-feedback.json",
        ),
        retryable=False,
        waiting=True,
        round_content="I planned.",
        round_meta={"session_id": "s-1", "session_host": "q.h.1"},
    )


def test_a_visit_reply_crosses_the_wire_unchanged() -> None:
    pytest.importorskip("temporalio")
    result = _full_result()
    defaults = StepResult(outcome="success")
    unset = [
        f.name
        for f in dataclasses.fields(StepResult)
        if getattr(result, f.name) == getattr(defaults, f.name)
    ]
    assert unset == [], f"set these in the sample too: {unset}"
    reply = VisitReply(result, duration_ms=1234, commit="c0ffee", queue="swell.h.1")
    converter = data_converter().payload_converter
    (back,) = converter.from_payloads(converter.to_payloads([reply]), [VisitReply])
    assert back == reply
    assert [type(e) for e in back.result.events] == [
        ev.Warning,
        ev.ArtifactWritten,
        ev.ContextSet,
    ]
