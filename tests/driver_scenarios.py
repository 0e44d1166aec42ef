"""One table of runs, made of command steps only, that every driver of the run loop
must record alike: the local asyncio runner, the engine harness's in-order driver
(tests/engine/test_drivers.py) and the Temporal workflow
(tests/temporal/test_drivers_agree.py). Each pipeline is sequential, so the events
of a run have one order whichever driver runs it.

`comparable` masks what differs between two runs of the same pipeline by design:
run ids, times and durations, and the run's own paths."""

from __future__ import annotations

import re
from typing import Any

SCENARIOS: dict[str, str] = {
    # a loop routed by context until its "tests" pass on the third attempt
    "loop": """
kind: WavePipeline
metadata: {name: loop}
steps:
  - id: implement
    type: command
    script: echo "attempt {{ input }}" >> work.txt
  - id: run-tests
    type: command
    dependencies: [implement]
    script: |
      n=$(grep -c . work.txt)
      [ "$n" -ge 3 ] || { echo "FAIL test_$n" >&2; exit 1; }
    output:
      context:
        tests_pass: "{{ exit_code == 0 }}"
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - target: _complete
        condition: "context.tests_pass=true"
      - target: implement
""",
    # a contract that fails once sends its step to a rework step, then passes
    "rework": """
kind: WavePipeline
metadata: {name: rework}
steps:
  - id: produce
    type: command
    script: echo produced >> produced.txt
    handover:
      contracts:
        - type: test_suite
          command: "test -f fixes.txt"
          on_failure: rework
          rework_step: fixer
  - id: fixer
    type: command
    rework_only: true
    script: echo fixed >> fixes.txt
  - id: after
    type: command
    dependencies: [produce]
    script: echo after
""",
    # a step that fails twice, is retried, then succeeds
    "retry": """
kind: WavePipeline
metadata: {name: retry}
steps:
  - id: work
    type: command
    script: |
      n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
      if [ "$n" -lt 3 ]; then echo "FAIL run_$n"; exit 1; fi
    retry: {max_attempts: 3, backoff: fixed, base_delay: 1ms}
  - id: after
    type: command
    dependencies: [work]
    script: echo after
""",
    # the same failure again and again, routed back each time: the breaker ends it
    "breaker": """
kind: WavePipeline
metadata: {name: breaker}
steps:
  - id: work
    type: command
    script: echo "FAIL the same way" >&2; exit 1
    edges:
      - target: work
        condition: outcome=failure
""",
    # a failure no edge takes fails the run; the steps after it never start
    "fails": """
kind: WavePipeline
metadata: {name: fails}
steps:
  - id: first
    type: command
    script: echo first
  - id: broken
    type: command
    dependencies: [first]
    script: exit 3
  - id: never
    type: command
    dependencies: [broken]
    script: echo never
""",
}

# how each run ends
ENDS = {
    "loop": "succeeded",
    "rework": "succeeded",
    "retry": "succeeded",
    "breaker": "failed",
    "fails": "failed",
}

# what differs between two runs of one pipeline by design
# a checkpoint's commit (and its parent) holds the time and the run's id; its tree does not
_MASKED = {"run_id", "ts", "duration_ms", "workspace", "commit", "parent"}


def comparable(events: list[dict[str, Any]], run_id: str) -> list[dict[str, Any]]:
    """The events of a run with ids, times, durations and the run's paths masked."""
    return [_mask(event, run_id) for event in events]


def _mask(value: Any, run_id: str) -> Any:
    if isinstance(value, dict):
        return {k: "*" if k in _MASKED else _mask(v, run_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, run_id) for v in value]
    if isinstance(value, str):
        return re.sub(r"\S*" + re.escape(run_id) + r"\S*", "<run>", value)
    return value
