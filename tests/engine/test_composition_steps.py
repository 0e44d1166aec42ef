"""Composition steps run for real: iterate, aggregate, branch, loop, and a sub-pipeline's
`config` (docs/composition.md), driven in process with command steps."""

from __future__ import annotations

import json
from pathlib import Path

from harness import Harness, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

ITEM = """
kind: WavePipeline
pipeline_outputs:
  result: {step: work, artifact: result, type: string}
steps:
  - id: work
    script: |
      mkdir -p out
      case "$ITEM_INPUT" in *bad*) echo "no good: $ITEM_INPUT" >&2; exit 3;; esac
      printf '{"name": "%s", "found": ["%s-1"]}' "{{ input }}" "{{ input }}" > out/result.json
      echo "{{ input }}" >> "{{ project_root }}/ran.txt"
    output_artifacts:
      - {name: result, path: out/result.json, type: json}
"""


def _item_pipeline(h: Harness) -> None:
    # the bad item fails through its input (the script reads it from the environment)
    h.pipeline(ITEM.replace("$ITEM_INPUT", "{{ input }}"), name="item")


def _collected(h: Harness, run_id: str, step: str) -> list[object]:
    state = h.runs[run_id].runner.state
    return json.loads(Path(state.artifacts[step]["collected-output"]).read_text())


def test_iterate_runs_a_child_per_item_and_collects_their_outputs_in_item_order(
    h: Harness,
) -> None:
    _item_pipeline(h)
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: list
            script: echo '["a", "b", "c"]' > items.json
            output_artifacts: [{name: items, path: items.json, type: json}]
          - id: each
            dependencies: [list]
            pipeline: item
            input: "{{ item }}"
            iterate: {over: "{{ list.out.items }}", mode: parallel, max_concurrent: 2}
          - id: merge
            dependencies: [each]
            aggregate:
              from: "{{ each.out.collected-output }}"
              into: merged/found.json
              strategy: merge_arrays
              key: found
          - id: show
            dependencies: [merge]
            memory:
              inject_artifacts: [{step: merge, artifact: found}]
            script: cat .wave/artifacts/found
        """
    )
    result = h.run("p")
    assert result.status == "succeeded", result.error
    closed_once(result.events)
    started = result.of(ev.ChildRunStarted)
    assert sorted(s.item for s in started) == [0, 1, 2]
    assert {s.pipeline for s in started} == {"item"}
    slots = _collected(h, result.run_id, "each")
    assert slots == [{"name": n, "found": [f"{n}-1"]} for n in "abc"]
    assert json.loads(result.artifact("merge", "found").read_text()) == ["a-1", "b-1", "c-1"]
    assert json.loads(result.of(ev.StepFinished)[-1].output_tail) == ["a-1", "b-1", "c-1"]
    # each item's child is a linked run, in a workspace of its own
    for s in started:
        child = h.sink.of(s.child_run_id)
        assert isinstance(child[0], ev.RunStarted)
        assert child[0].parent_run_id == result.run_id and child[0].parent_step_id == "each"
        assert child[0].workspace != str(h.workspace(result.run_id))


def test_iterate_on_failure_continue_collects_the_others_and_records_the_failure(
    h: Harness,
) -> None:
    _item_pipeline(h)
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: each
            pipeline: item
            input: "{{ item }}-{{ iteration }}"
            iterate: {over: '["x", "bad", "y"]', mode: sequential, on_failure: continue}
        """
    )
    result = h.run("p")
    assert result.status == "succeeded", result.error
    slots = _collected(h, result.run_id, "each")
    assert slots[0] == {"name": "x-0", "found": ["x-0-1"]}
    assert slots[1] is None
    assert slots[2] == {"name": "y-2", "found": ["y-2-1"]}
    (warning,) = [w for w in result.of(ev.Warning) if "went on" in w.message]
    assert "1 of 3 items failed" in warning.message and "item 1 (item)" in warning.message


def test_iterate_without_continue_fails_and_starts_no_more_items(h: Harness) -> None:
    _item_pipeline(h)
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: each
            pipeline: item
            input: "{{ item }}"
            iterate: {over: '["bad", "never"]'}
        """
    )
    result = h.run("p")
    assert result.status == "failed"
    assert "item 0 (item)" in (result.error or "") and "no good: bad" in (result.error or "")
    assert [s.item for s in result.of(ev.ChildRunStarted)] == [0]


def test_iterate_over_that_is_no_json_array_is_a_clear_error(h: Harness) -> None:
    _item_pipeline(h)
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: each
            pipeline: item
            iterate: {over: '{"a": 1}'}
        """
    )
    result = h.run("p")
    assert result.status == "failed"
    assert "iterate.over must render to a JSON array" in (result.error or "")
    assert not result.of(ev.ChildRunStarted)


def test_iterate_renders_the_pipeline_name_per_item(h: Harness) -> None:
    for name in ("one", "two"):
        h.pipeline(
            f"""
            kind: WavePipeline
            steps:
              - id: s
                script: echo '"{name}"' > r.json
                output_artifacts: [{{name: r, path: r.json}}]
            """,
            name=name,
        )
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: each
            pipeline: "{{ item }}"
            iterate: {over: '["two", "one"]', mode: parallel}
        """
    )
    result = h.run("p")
    assert result.status == "succeeded", result.error
    assert _collected(h, result.run_id, "each") == ["two", "one"]


def test_branch_runs_the_matching_case_else_default_and_skip_runs_nothing(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: s
            script: echo "fast for {{ input }}" > fast.txt
            output_artifacts: [{name: note, path: fast.txt}]
        """,
        name="fast",
    )
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: pick
            script: echo "{{ input }}" > mode.txt
            output_artifacts: [{name: mode, path: mode.txt}]
          - id: route
            dependencies: [pick]
            branch:
              on: "{{ pick.out.mode }}"
              cases: {quick: fast, none: skip, default: fast}
          - id: after
            dependencies: [route]
            script: cat fast.txt 2>/dev/null || echo nothing
        """
    )
    quick = h.run("p", "quick")
    assert quick.status == "succeeded", quick.error
    assert quick.of(ev.StepFinished)[-1].output_tail == "fast for quick\n"
    assert quick.artifact("route", "note").read_text() == "fast for quick\n"
    other = h.run("p", "other")
    assert other.status == "succeeded" and len(other.of(ev.ChildRunStarted)) == 1
    none = h.run("p", "none")
    assert none.status == "succeeded", none.error
    assert not none.of(ev.ChildRunStarted)
    route = next(f for f in none.of(ev.StepFinished) if f.step_id == "route")
    assert "case 'none' -> skip" in (route.output_tail or "")


def test_branch_without_a_match_or_default_fails(h: Harness) -> None:
    h.pipeline("kind: WavePipeline\nsteps:\n  - id: s\n    script: 'true'\n", name="fast")
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: route
            branch: {on: "{{ input }}", cases: {quick: fast}}
        """
    )
    result = h.run("p", "slow")
    assert result.status == "failed"
    assert "no case for 'slow' and no `default`" in (result.error or "")


def test_loop_runs_every_sub_step_until_the_condition_holds(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: fix
            loop:
              max_iterations: 5
              until: context.tests=pass
              steps:
                - id: change
                  script: echo x >> attempts.txt
                - id: test
                  dependencies: [change]
                  script: test "$(wc -l < attempts.txt)" -ge 3 && echo pass || echo fail
                  output:
                    context: {tests: "{{ stdout }}"}
          - id: after
            dependencies: [fix]
            script: wc -l < attempts.txt
        """
    )
    result = h.run("p")
    assert result.status == "succeeded", result.error
    assert result.of(ev.StepFinished)[-1].output_tail.strip() == "3"
    fix = next(f for f in result.of(ev.StepFinished) if f.step_id == "fix")
    assert fix.output_tail == "3 iterations"


def test_loop_stops_at_the_breaker_when_an_iteration_fails_the_same_way(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: fix
            loop:
              max_iterations: 10
              until: outcome=success
              steps:
                - id: try
                  script: echo x >> tries.txt; echo "still broken" >&2; exit 1
        """
    )
    result = h.run("p")
    assert result.status == "failed"
    assert "circuit breaker" in (result.error or "") and "3 times" in (result.error or "")
    tries = (h.workspace(result.run_id) / "tries.txt").read_text().splitlines()
    assert len(tries) == 3


def test_loop_whose_until_never_holds_fails(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: fix
            loop:
              max_iterations: 2
              until: context.done=yes
              steps:
                - {id: a, script: "echo $RANDOM"}
        """
    )
    result = h.run("p")
    assert result.status == "failed"
    assert "`until` did not hold after 2 iterations" in (result.error or "")


def test_sub_pipeline_config_env_inject_extract_and_stop_condition(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: c
            script: |
              echo "profile={{ env.profile }}" > report.txt
              cat "{{ artifacts.notes }}" >> report.txt
            output_artifacts: [{name: report, path: report.txt}]
            output:
              context: {verdict: "done"}
        """,
        name="child",
    )
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: prep
            script: echo "some notes" > notes.txt
            output_artifacts: [{name: notes, path: notes.txt}]
          - id: sub
            dependencies: [prep]
            pipeline: child
            config:
              env: {profile: core}
              inject: [notes]
              extract: [report]
              stop_condition: context.verdict=done
          - id: after
            dependencies: [sub]
            script: echo "stop={{ sub_pipeline_stop }} verdict={{ context.verdict }}"
        """
    )
    result = h.run("p")
    assert result.status == "succeeded", result.error
    assert result.of(ev.StepFinished)[-1].output_tail == "stop=true verdict=done\n"
    copy = result.artifact("sub", "child.report")
    assert copy.read_text() == "profile=core\nsome notes\n"
    assert str(copy).startswith(str(h.runs[result.run_id].plan.run_dir))


def test_sub_pipeline_timeout_fails_the_step(h: Harness) -> None:
    h.pipeline("kind: WavePipeline\nsteps:\n  - id: s\n    script: sleep 20\n", name="slow")
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: sub
            pipeline: slow
            config: {timeout: 300ms}
        """
    )
    result = h.run("p")
    assert result.status == "failed"
    assert "timed out (300ms)" in (result.error or "")
