"""Wave's fan-out run for real: a matrix `strategy` (one agent per item, `{{ task }}`,
`max_concurrency`, failures per item, dependency tiers, child pipelines) and
`concurrency: N`, driven in process with the scripted adapter (docs/composition.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import Harness, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

TASKS = """
kind: WavePipeline
steps:
  - id: plan
    script: |
      echo '{"tasks": ["alpha", "beta", "gamma"]}' > tasks.json
    output_artifacts: [{name: tasks, path: tasks.json, type: json}]
  - id: fan
    persona: dev
    dependencies: [plan]
    strategy: {type: matrix, items_source: plan/tasks.json, item_key: tasks, max_concurrency: MAX}
    exec: {type: prompt, source: "Work on {{ task }} only."}
    output_artifacts: [{name: result, path: out/result.json, type: json}]
  - id: after
    dependencies: [fan]
    script: cat "{{ artifacts.fan.result }}" > seen.json
"""


def _worker_reply(i: int, delay: float = 0.0, fail: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "step": f"fan.worker-{i}",
        "text": "done",
        "files": {f"mine-{i}.txt": f"worker {i}\n", "out/result.json": json.dumps({"n": i})},
        "delay": delay,
    }
    if fail:
        reply = {"step": f"fan.worker-{i}", "fail": fail}
    return reply


def _results(h: Harness, run_id: str, kind: str = "matrix") -> dict[str, Any]:
    state = h.runs[run_id].runner.state
    data: dict[str, Any] = json.loads(Path(state.artifacts["fan"][f"{kind}-results"]).read_text())
    return data


def test_matrix_runs_an_agent_per_item_in_its_own_workspace_two_at_a_time(h: Harness) -> None:
    h.pipeline(TASKS.replace("MAX", "2"))
    h.replies([_worker_reply(0, delay=0.6), _worker_reply(1, delay=0.2), _worker_reply(2)])
    result = h.run()
    assert result.status == "succeeded", result.error
    closed_once(result.events)
    assert result.visits("fan") == [("fan", 1, "success")]

    prompts = {c["step_id"]: c["prompt"] for c in h.calls()}
    assert sorted(prompts) == ["fan.worker-0", "fan.worker-1", "fan.worker-2"]
    for i, task in enumerate(["alpha", "beta", "gamma"]):
        assert f"Work on {task} only." in prompts[f"fan.worker-{i}"]

    data = _results(h, result.run_id)
    assert (data["total_workers"], data["success_count"], data["fail_count"]) == (3, 3, 0)
    spaces = [Path(w["workspace"]) for w in data["worker_results"]]
    assert len(set(spaces)) == 3
    for i, space in enumerate(spaces):
        assert data["worker_results"][i]["item"] == ["alpha", "beta", "gamma"][i]
        # each worker saw only its own files
        assert sorted(p.name for p in space.glob("mine-*.txt")) == [f"mine-{i}.txt"]
        assert data["worker_results"][i]["modified_files"] == [f"mine-{i}.txt"]

    # at most two at once: the third started only after the second ended, while the
    # first was still working
    started_third = (spaces[2] / ".git" / "HEAD").stat().st_mtime_ns
    assert (spaces[1] / "mine-1.txt").stat().st_mtime_ns <= started_third
    assert started_third < (spaces[0] / "mine-0.txt").stat().st_mtime_ns

    # the declared output aggregated, one slot per item, and handed on
    assert json.loads(result.artifact("fan", "result").read_text()) == [
        {"n": 0},
        {"n": 1},
        {"n": 2},
    ]
    seen = h.workspace(result.run_id) / "seen.json"
    assert json.loads(seen.read_text()) == [{"n": 0}, {"n": 1}, {"n": 2}]


def test_a_failing_item_fails_the_step_names_it_and_starts_no_more(h: Harness) -> None:
    h.pipeline(TASKS.replace("MAX", "1"))
    h.replies([_worker_reply(0), _worker_reply(1, fail="cannot do beta"), _worker_reply(2)])
    result = h.run()
    assert result.status == "failed"
    assert result.visits("fan") == [("fan", 1, "failure")]
    (finished,) = [e for e in result.of(ev.StepFinished) if e.step_id == "fan"]
    assert "1/3 workers failed, 1 skipped" in (finished.error or "")
    assert "worker[1]" in (finished.error or "") and "cannot do beta" in (finished.error or "")
    data = _results(h, result.run_id)
    assert [w["status"] for w in data["worker_results"]] == ["succeeded", "failed", "skipped"]
    assert [c["step_id"] for c in h.calls()] == ["fan.worker-0", "fan.worker-1"]
    # what succeeded is kept: the failed and unstarted items' slots are null
    assert json.loads(result.artifact("fan", "result").read_text()) == [{"n": 0}, None, None]


TIERS = """
kind: WavePipeline
steps:
  - id: plan
    script: |
      cat > items.json <<'EOF'
      [{"id": "a", "after": []}, {"id": "b", "after": ["a"]}, {"id": "c", "after": []},
       {"id": "d", "after": ["b"]}]
      EOF
  - id: fan
    persona: dev
    dependencies: [plan]
    strategy:
      type: matrix
      items_source: items.json
      item_id_key: id
      dependency_key: after
    exec: {type: prompt, source: "Item {{ task.id }}"}
"""


def test_dependency_tiers_run_in_order_and_skip_the_dependents_of_a_failure(h: Harness) -> None:
    h.pipeline(TIERS)
    h.replies(
        [
            {"step": "fan.worker-0", "fail": "a broke"},
            {"step": "fan.worker-2", "text": "c done"},
        ]
    )
    result = h.run()
    assert result.status == "failed"
    data = _results(h, result.run_id)
    by_id = {w["item_id"]: w for w in data["worker_results"]}
    assert {k: w["status"] for k, w in by_id.items()} == {
        "a": "failed",
        "b": "skipped",
        "c": "succeeded",
        "d": "skipped",
    }
    assert by_id["b"]["skip_reason"] == "dependency 'a' failed"
    assert by_id["d"]["skip_reason"] == "dependency 'b' failed"
    assert sorted(c["step_id"] for c in h.calls()) == ["fan.worker-0", "fan.worker-2"]
    assert (data["fail_count"], data["skip_count"], data["success_count"]) == (1, 2, 1)


def test_matrix_items_as_child_runs_with_an_input_template(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: work
            script: |
              printf '{"did": "%s"}' "{{ input }}" > did.json
            output_artifacts: [{name: did, path: did.json, type: json}]
        """,
        name="item",
    )
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: plan
            script: |
              echo '[{"name": "x", "size": 1}, {"name": "y", "size": 2}]' > items.json
          - id: fan
            dependencies: [plan]
            strategy:
              type: matrix
              items_source: items.json
              child_pipeline: item
              input_template: "{{ .name }}-{{ .size }}"
        """
    )
    result = h.run()
    assert result.status == "succeeded", result.error
    data = _results(h, result.run_id)
    assert [w["output"] for w in data["worker_results"]] == [{"did": "x-1"}, {"did": "y-2"}]
    children = result.of(ev.ChildRunStarted)
    assert sorted(c.item for c in children) == [0, 1]
    assert all(c.pipeline == "item" for c in children)


CONCURRENT = """
kind: WavePipeline
steps:
  - id: fan
    persona: dev
    concurrency: 3
    exec: {type: prompt, source: "Find a bug."}
    output_artifacts: [{name: found, path: found.md, type: markdown}]
"""


def test_concurrency_runs_n_identical_agents_each_apart(h: Harness) -> None:
    h.pipeline(CONCURRENT)
    h.replies([{"step": f"fan.agent-{i}", "files": {"found.md": f"bug {i}\n"}} for i in range(3)])
    result = h.run()
    assert result.status == "succeeded", result.error
    calls = h.calls()
    assert sorted(c["step_id"] for c in calls) == ["fan.agent-0", "fan.agent-1", "fan.agent-2"]
    assert all("Find a bug." in c["prompt"] for c in calls)
    assert len({c["workspace"] for c in calls}) == 3
    data = _results(h, result.run_id, "concurrency")
    assert (data["total_agents"], data["success_count"], data["fail_count"]) == (3, 3, 0)
    assert result.artifact("fan", "found").read_text() == "bug 0\n\nbug 1\n\nbug 2\n"


def test_concurrency_is_capped_by_the_runtime_and_fails_when_an_agent_does(h: Harness) -> None:
    h.pipeline(CONCURRENT.replace("concurrency: 3", "concurrency: 6"))
    # the harness's wave.yaml sets runtime.max_concurrency: 4
    h.replies(
        [{"step": f"fan.agent-{i}", "files": {"found.md": "x\n"}} for i in range(3)]
        + [{"step": "fan.agent-3", "fail": "out of ideas"}]
    )
    result = h.run()
    assert result.status == "failed"
    data = _results(h, result.run_id, "concurrency")
    assert data["total_agents"] == 4
    assert (data["success_count"], data["fail_count"]) == (3, 1)
    assert "agent[3]: " in (result.error or "") and "out of ideas" in (result.error or "")
