"""Adapters that can load ahead (`preload(setup, model)`, engine/agent/preload.py) are asked
to when a run starts, once per adapter and model, after the first visits started, so
a prompt step later in the run does not wait for the load."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from typing import Any, ClassVar

from harness import Harness, h_fixture  # noqa: F401 - the fixture `h`

from swell.adapters.base import AdapterSetup
from swell.adapters.scripted import ScriptedAdapter
from swell.engine.agent.preload import agent_models
from swell.events import models as ev

PIPELINE = """
kind: WavePipeline
steps:
  - id: build
    script: sleep 0.3
  - id: answer
    persona: dev
    dependencies: [build]
    exec: {type: prompt, source: "Say hi"}
  - id: review
    persona: critic
    model: strongest
    dependencies: [answer]
    exec: {type: prompt, source: "Review"}
"""


class Preloading(ScriptedAdapter):
    """The scripted adapter, recording when and for what it was asked to preload."""

    asked: ClassVar[list[tuple[str, str | None, float]]] = []

    @classmethod
    def preload(cls, setup: AdapterSetup, model: str | None) -> None:
        cls.asked.append((setup.name, model, time.time()))


def _replies(h: Harness) -> None:
    h.replies([{"step": "answer", "text": "hi"}, {"step": "review", "text": "fine"}])


def test_a_run_asks_its_adapters_to_preload_while_earlier_steps_run(h: Harness) -> None:
    Preloading.asked = []
    h.services.adapters.register("scripted", Preloading)
    h.pipeline(PIPELINE)
    _replies(h)
    result = h.run()
    assert result.status == "succeeded"
    # dev and critic share the adapter; the models differ (none, the strongest tier)
    assert [(name, model) for name, model, _ in Preloading.asked] == [
        ("scripted", None),
        ("scripted", "strongest"),
    ]
    # asked at the start, while `build` (0.3 s) ran: not when `answer` started
    build_ended = next(e for e in result.of(ev.StepFinished) if e.step_id == "build")
    ended = datetime.fromisoformat(build_ended.ts.replace("Z", "+00:00")).timestamp()
    assert all(when < ended - 0.1 for _, _, when in Preloading.asked)


def test_the_model_each_agent_step_will_use(h: Harness) -> None:
    h.manifest(
        """
        kind: WaveManifest
        adapters:
          scripted:
            options: {script: replies.yaml}
            default_model: small
            tier_models: {strongest: big}
        personas:
          dev: {adapter: scripted}
          critic: {adapter: scripted, model: strongest}
        """
    )
    h.pipeline(PIPELINE)
    plan = h.plan()
    steps = plan.pipeline.pipeline.steps
    assert agent_models(plan, steps) == [("scripted", "small"), ("scripted", "big")]
    overridden = replace(plan, options=replace(plan.options, adapter="other", model="m"))
    assert agent_models(overridden, steps) == [("other", "m")]


def test_adapters_that_cannot_preload_and_unknown_ones_are_left_alone(h: Harness) -> None:
    h.pipeline(PIPELINE)
    _replies(h)
    assert h.run().status == "succeeded"  # the scripted adapter has no `preload`

    class Broken(ScriptedAdapter):
        @classmethod
        def preload(cls, setup: AdapterSetup, model: Any) -> None:
            raise RuntimeError("cannot")

    h.services.adapters.register("scripted", Broken)
    _replies(h)
    assert h.run().status == "succeeded"
