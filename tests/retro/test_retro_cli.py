"""`swell retro RUN` and `swell retro stats` over real runs (scripted agents, command
steps): friction classified from the stored events, loops, stats, narration and the
retro kept after each run (`runtime.retros`)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline

BREAKER = """kind: WavePipeline
metadata: {name: stuck}
max_step_visits: 20
steps:
  - id: implement
    type: command
    script: echo fix >> work.txt
  - id: run-tests
    type: command
    dependencies: [implement]
    script: 'echo "===== 3 failed, 7 passed =====" >&2; exit 1'
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - {target: _complete, condition: outcome=success}
      - {target: implement}
"""
NARRATOR_SCRIPT = """replies:
  - step: retro
    text: "The review sent the change back once; the rework passed."
    usage: {input_tokens: 300, output_tokens: 20}
"""


def run(project: Path, *args: str) -> str:
    result = swell("run", *args, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    return run_id_of(result.stdout)


def test_review_rework_is_its_own_kind_and_its_loop_shows_the_feedback(project: Path) -> None:
    run_id = run(project, "impl-issue", "--input", "add greet")
    retro = swell_json("retro", run_id, cwd=project)
    assert retro["counts"]["review_rework"] == 1
    assert retro["counts"]["retry"] == 0 and retro["counts"]["contract_failure"] == 0
    (point,) = retro["friction"]
    assert (point["kind"], point["step_id"], point["visit"]) == ("review_rework", "implement", 1)
    assert "[critical] greeting.py:2 debugging print left in library code" in point["feedback"]
    assert retro["smoothness"] == 90 and retro["rating"] == "effortless"
    assert retro["reviews"] == 2 and retro["reviews_passed"] == 1
    assert retro["totals"]["review_tokens_in"] == 1300 + 1250
    assert retro["totals"]["tokens_in"] == 400 + 2100 + 2600
    (loop,) = retro["loops"]
    first, rework = loop["changes"]
    assert loop["step_id"] == "implement" and first["files"] == ["greeting.py"]
    assert rework["step_id"] == "address-review" and rework["reason"] == "rework"
    assert rework["driven_by"].startswith("review by reviewer: rework")
    assert "suggestion: remove the print" in rework["feedback"]
    text = swell("retro", run_id, cwd=project)
    assert (
        text.returncode == 0
        and "review_rework" in text.stdout
        and "smoothness 90/100" in text.stdout
    )


def test_a_test_loop_says_what_drove_each_visit(project: Path) -> None:
    run_id = run(project, "loop", "--input", "x")
    retro = swell_json("retro", run_id, cwd=project)
    loop = next(x for x in retro["loops"] if x["step_id"] == "implement")
    assert [c["visit"] for c in loop["changes"]] == [1, 2, 3]
    assert loop["changes"][1]["driven_by"] == (
        "run-tests#1 failed: exit code 1: FAIL test_greeting: expected 3 attempts, found 1"
    )
    assert sum(retro["counts"].values()) == 0
    assert retro["smoothness"] == 100 - 2 * 6 and retro["rating"] == "smooth"


def test_breaker_trip_and_failed_run(project: Path) -> None:
    write_pipeline(project, "stuck", BREAKER)
    result = swell("run", "stuck", cwd=project)
    assert result.returncode != 0
    run_id = run_id_of(result.stdout)
    retro = swell_json("retro", run_id, cwd=project)
    assert retro["counts"]["breaker_trip"] == 1 and retro["rating"] == "failed"
    (trip,) = [p for p in retro["friction"] if p["kind"] == "breaker_trip"]
    assert trip["step_id"] == "run-tests" and "3 times in a row" in trip["detail"]


def test_gate_wait_is_timed(project: Path) -> None:
    proc = start_swell("run", "review", "--input", "v1", "--wait", cwd=project)
    try:
        run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
        assert swell("approve", run_id, "approve", "--choice", "ship", cwd=project).returncode == 0
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    retro = swell_json("retro", run_id, cwd=project)
    (wait,) = retro["friction"]
    assert wait["kind"] == "gate_wait" and wait["penalty"] == 0
    assert wait["wait_ms"] is not None and wait["wait_ms"] > 0
    assert "approved (ship)" in wait["detail"] and retro["gate_wait_ms"] == wait["wait_ms"]


def test_stats_over_runs_by_pipeline_and_period(project: Path) -> None:
    run(project, "impl-issue", "--input", "a")
    run(project, "impl-issue", "--input", "b")
    run(project, "loop", "--input", "c")
    stats = swell_json("retro", "stats", "--pipeline", "impl-issue", "--since", "1d", cwd=project)
    assert stats["runs"] == 2 and stats["statuses"] == {"succeeded": 2}
    assert stats["reviews"] == 4 and stats["review_pass_rate"] == 0.5
    assert stats["rework_after_review_rate"] == 0.5
    assert stats["review_tokens_avg"] == (1300 + 140 + 1250 + 40) / 2
    assert stats["friction"]["review_rework"] == 2 and stats["runs_with"]["review_rework"] == 2
    implement = next(s for s in stats["steps"] if s["step_id"] == "implement")
    assert implement["reviews"] == 4 and implement["visits_per_run"] == 1.0
    everything = swell_json("retro", "stats", cwd=project)
    assert everything["runs"] == 3
    loop_step = next(
        s for s in everything["steps"] if s["pipeline"] == "loop" and s["step_id"] == "implement"
    )
    assert loop_step["visits_per_run"] == 3.0 and loop_step["max_visits"] == 3
    assert everything["duration"]["median_ms"] is not None
    text = swell("retro", "stats", "-p", "impl-issue", cwd=project)
    assert "2 runs of impl-issue" in text.stdout and "rework after review 50%" in text.stdout
    none = swell("retro", "stats", "--since", "2999-01-01", cwd=project)
    assert none.returncode == 0 and "no runs" in none.stdout


def test_cancelled_runs_and_routing_visits_are_no_failures(project: Path) -> None:
    """A cancelled run is a person's choice: out of the success rate, rated `cancelled`.
    A conditional step routing on a failed test inherits its outcome: that is the test's
    failure, not the router's."""
    looped = run(project, "loop", "--input", "x")  # run-tests fails twice, then passes
    write_pipeline(project, "stuck", BREAKER)
    assert swell("run", "stuck", cwd=project).returncode == 1  # a failed run
    write_pipeline(project, "slow", "kind: WavePipeline\nsteps:\n  - id: s\n    script: sleep 30\n")
    slow = run_id_of(swell("run", "slow", "--timeout", "1s", cwd=project).stdout)
    assert swell("cancel", slow, cwd=project).returncode == 0
    stats = swell_json("retro", "stats", cwd=project)
    assert stats["statuses"] == {"succeeded": 1, "failed": 1, "cancelled": 1}
    assert stats["success_rate"] == 0.5  # 1 of the 2 runs that succeeded or failed
    assert stats["ratings"]["cancelled"] == 1 and stats["ratings"]["failed"] == 1
    steps = {(s["pipeline"], s["step_id"]): s for s in stats["steps"]}
    assert (steps["loop", "run-tests"]["visits"], steps["loop", "run-tests"]["failed"]) == (3, 2)
    assert (steps["loop", "check"]["visits"], steps["loop", "check"]["failed"]) == (3, 0)
    assert steps["stuck", "check"]["failed"] == 0 and steps["stuck", "run-tests"]["failed"] >= 3
    retro = swell_json("retro", looped, cwd=project)
    failed = {s["step_id"]: s["failed"] for s in retro["steps"]}
    assert failed == {"implement": 0, "run-tests": 2, "check": 0}
    assert swell_json("retro", slow, cwd=project)["rating"] == "cancelled"


def test_user_errors_are_one_line(project: Path) -> None:
    bad = swell("retro", "stats", "--since", "last week", cwd=project)
    assert (
        bad.returncode != 0
        and bad.stderr.startswith("error: --since")
        and "Traceback" not in bad.stderr
    )
    missing = swell("retro", "nope", cwd=project)
    assert missing.returncode != 0 and "no run 'nope'" in missing.stderr
    run_id = run(project, "loop", "--input", "x")
    unknown = swell("retro", run_id, "--narrate", "nobody", cwd=project)
    assert unknown.returncode != 0 and "unknown persona 'nobody'" in unknown.stderr


def _add_narrator(project: Path) -> None:
    (project / "scripts" / "narrator.yaml").write_text(NARRATOR_SCRIPT)
    manifest = project / "wave.yaml"
    text = manifest.read_text()
    text = text.replace(
        "personas:\n",
        "personas:\n  narrator:\n    adapter: narrate\n    system_prompt: Be brief.\n",
        1,
    )
    text = text.replace(
        "adapters:\n",
        "adapters:\n  narrate:\n    type: scripted\n    options: {script: scripts/narrator.yaml}\n",
        1,
    )
    manifest.write_text(text)


def test_narrate_adds_a_summary_and_changes_no_number(project: Path) -> None:
    _add_narrator(project)
    run_id = run(project, "impl-issue", "--input", "add greet")
    plain = swell_json("retro", run_id, cwd=project)
    told = swell_json("retro", run_id, "--narrate", "narrator", cwd=project)
    assert told["narrative"] == "The review sent the change back once; the rework passed."
    assert told["narrator"] == "narrator"
    for key in ("smoothness", "counts", "friction", "totals", "steps", "loops"):
        assert told[key] == plain[key]
    # kept with the run's retro: later views show it without asking the agent again
    again = swell("retro", run_id, cwd=project)
    assert "narrative (narrator):" in again.stdout


def test_a_narrated_retro_is_kept_after_each_run_unless_turned_off(
    project: Path, isolated_state: Path
) -> None:
    plain = run(project, "loop", "--input", "a")
    assert not (isolated_state / "retros" / f"{plain}.json").exists()  # nothing to add
    _add_narrator(project)
    manifest = project / "wave.yaml"
    narrated = "runtime:\n  relay: {summarizer_persona: narrator}\n  retros: {narrate: true}\n"
    manifest.write_text(manifest.read_text().replace("runtime:\n", narrated, 1))
    run_id = run(project, "impl-issue", "--input", "a")
    kept = json.loads((isolated_state / "retros" / f"{run_id}.json").read_text())
    assert kept["run_id"] == run_id and kept["counts"]["review_rework"] == 1
    assert kept["narrative"] and kept["narrator"] == "narrator"
    shown = swell("retro", run_id, cwd=project)
    assert "narrative (narrator):" in shown.stdout  # without asking the agent again
    manifest.write_text(
        manifest.read_text().replace(
            "retros: {narrate: true}", "retros: {narrate: true, enabled: false}"
        )
    )
    second = run(project, "loop", "--input", "b")
    assert not (isolated_state / "retros" / f"{second}.json").exists()
    checked = swell("validate", cwd=project)
    assert "retros" not in checked.stdout + checked.stderr  # runs now: no "not run" warning


def test_without_a_run_it_is_the_newest_run(project: Path) -> None:
    none_yet = swell("retro", cwd=project)
    assert none_yet.returncode != 0 and "no runs yet" in none_yet.stderr
    run(project, "loop", "--input", "x")
    newest = run(project, "loop", "--input", "y")
    assert swell_json("retro", cwd=project)["run_id"] == newest
    text = swell("retro", cwd=project)
    assert text.returncode == 0 and newest in text.stdout
    helped = swell("retro", "--help", cwd=project)
    assert helped.returncode == 0 and "stats" in helped.stdout
