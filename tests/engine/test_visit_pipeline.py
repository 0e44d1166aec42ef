"""One visit pipeline: a loop's sub-step is finished as a plain visit is (artifacts,
contracts, context), and each event a visit emits is seen once."""

from __future__ import annotations

import re
import textwrap

from harness import Harness, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

# the agent's text and a pattern nothing matches: the contract's error counts the
# events of the visit it looked at
CONTRACT = """\
handover:
  contract:
    type: event_contains
    events:
      - {state: agent.text}
      - {state: warning, contains: never written}
"""
SEEN = re.compile(r"missing from the (\d+) event\(s\) of this visit")


def _step(text: str, indent: int) -> str:
    return textwrap.indent(textwrap.dedent(text) + CONTRACT, " " * indent)


def _seen(error: str | None) -> int:
    match = SEEN.search(error or "")
    assert match, error
    return int(match.group(1))


def test_a_loop_sub_steps_contract_sees_each_event_of_its_visit_once(h: Harness) -> None:
    reply = {"text": "done", "tool_calls": [{"name": "Bash", "target": "ls"}]}
    h.replies([{"step": s, **reply} for s in ("plain", "work")])
    agent = 'persona: dev\nexec: {type: prompt, source: "Work"}\n'
    h.pipeline("kind: WavePipeline\nsteps:\n  - id: plain\n" + _step(agent, 4), name="plain")
    h.pipeline(
        "kind: WavePipeline\nsteps:\n  - id: fix\n    loop:\n      max_iterations: 1\n"
        "      steps:\n        - id: work\n" + _step(agent, 10)
    )
    plain, looped = h.run("plain"), h.run("p")
    assert plain.status == looped.status == "failed"
    # what the sub-step emitted before its contract ran, as `swell logs` shows it
    around = ev.StepQueued | ev.StepStarted | ev.StepFinished | ev.ContractFailed | ev.RoundRecorded
    around |= ev.WorkspaceCheckpoint  # taken once the contracts have run
    emitted = [e for e in looped.events if e.step_id == "fix" and not isinstance(e, around)]
    assert _seen(looped.error) == _seen(plain.error) == len(emitted), (looped.error, emitted)


def test_a_loop_sub_step_records_its_outcomes_as_a_plain_visit_does(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: fix
            loop:
              max_iterations: 1
              steps:
                - id: publish
                  script: |
                    mkdir -p out && echo '{"pr": "https://x/pull/7"}' > out/r.json
                  outcomes:
                    - {type: pr, extract_from: out/r.json, json_path: .pr, label: PR}
        """
    )
    result = h.run("p")
    assert result.status == "succeeded", result.error
    recorded = [(e.step_id, e.label, e.value) for e in result.of(ev.OutcomeRecorded)]
    assert recorded == [("fix", "PR", "https://x/pull/7")]
