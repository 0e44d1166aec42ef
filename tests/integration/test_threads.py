"""Threads: rounds, fidelity levels, native resume vs transcripts, `swell thread`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import events, run_id_of, swell, swell_json, write_pipeline

MANIFEST = """
kind: WaveManifest
project:
  test_command: "[ $(grep -c . work.txt) -ge 2 ]"
adapters:
  scripted:
    options: {script: replies.yaml, calls: calls.jsonl}
  other:
    type: scripted
    options: {script: replies.yaml, calls: calls.jsonl}
personas:
  coder: {adapter: scripted, system_prompt: "You write code."}
  fixer: {adapter: other, system_prompt: "You fix code."}
  summarizer: {adapter: scripted}
runtime:
  relay: {summarizer_persona: summarizer}
"""

LOOP = """
kind: WavePipeline
metadata: {{name: impl}}
steps:
  - id: implement
    persona: {persona}
    thread: impl
    {fidelity}
    exec: {{type: prompt, source: "Make the tests pass: {{{{ input }}}}"}}
  - id: run-tests
    type: command
    thread: impl
    dependencies: [implement]
    script: |
      n=$(grep -c . work.txt)
      {{{{ project.test_command }}}} || {{ echo "FAILED test_feature: found $n lines" >&2; exit 1; }}
    output:
      context: {{passed: "{{{{ exit_code == 0 }}}}"}}
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - {{target: _complete, condition: "context.passed=true"}}
      - {{target: implement}}
"""

REPLIES = """
replies:
  - {step: implement, text: "First try: wrote one line.", files: {work.txt: "one\\n"}, session_id: sess-1}
  - {step: implement, text: "Second try: two lines now.", files: {work.txt: "one\\ntwo\\n"}, session_id: sess-1}
  - {step: implement.summary, text: "SUMMARY: one line written, test_feature failed."}
"""


def setup(
    project: Path, fidelity: str = "", persona: str = "coder", replies: str = REPLIES
) -> None:
    (project / "wave.yaml").write_text(MANIFEST)
    (project / "replies.yaml").write_text(replies)
    write_pipeline(project, "impl", LOOP.format(persona=persona, fidelity=fidelity))


def calls(project: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def test_second_visit_resumes_its_session_and_sees_the_failing_tests(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(project)
    result = swell("run", "impl", "--input", "feature X", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    first, second = calls(project)
    assert first["resume_session"] is None and "Earlier in this thread" not in first["prompt"]
    # full fidelity on the same adapter: resume the agent's own session, send what happened since
    assert second["resume_session"] == "sess-1"
    assert "## Since your last turn in this thread (impl)" in second["prompt"]
    assert "FAILED test_feature: found 1 lines" in second["prompt"]
    assert "First try" not in second["prompt"]  # already in the resumed session
    assert second["prompt"].endswith("## Your task\nMake the tests pass: feature X")
    assert second["env"]["SWELL_THREAD"] == "impl" and second["env"]["SWELL_RUN_ID"] == run_id_of(
        result.stdout
    )
    assert Path(second["env"]["SWELL_BIN"]).name == "swell"
    ctx = [e for e in events(project, run_id_of(result.stdout)) if e["type"] == "thread.context"]
    assert [(e["fidelity"], e["native_resume"], e["rounds"]) for e in ctx] == [
        ("fresh", False, 0),
        ("full", True, 2),
    ]


def test_transcript_injection_when_the_last_agent_round_used_another_adapter(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "wave.yaml").write_text(MANIFEST)
    (project / "replies.yaml").write_text("""
replies:
  - {step: implement, text: "Implemented with one line.", files: {work.txt: "one\\n"}}
  - {step: fix, text: "Fixed: two lines.", files: {work.txt: "one\\ntwo\\n"}}
""")
    write_pipeline(
        project,
        "switch",
        """
kind: WavePipeline
metadata: {name: switch}
steps:
  - id: implement
    persona: coder
    thread: impl
    exec: {type: prompt, source: "implement it"}
  - id: run-tests
    type: command
    thread: impl
    dependencies: [implement]
    script: "{{ project.test_command }} || { echo 'FAILED: needs two lines' >&2; exit 1; }"
  - id: route
    type: conditional
    dependencies: [run-tests]
    edges: [{target: _complete, condition: outcome=success}, {target: fix}]
  - id: fix
    persona: fixer
    thread: impl
    exec: {type: prompt, source: "fix it"}
""",
    )
    result = swell("run", "switch", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    fix = calls(project)[1]
    assert fix["resume_session"] is None
    prompt = fix["prompt"]
    assert "## Earlier in this thread (impl)" in prompt
    assert "[#1] implement (coder): success\nImplemented with one line." in prompt
    assert "[#2] run-tests: failure, exit 1\nFAILED: needs two lines" in prompt
    # personas switch inside a thread: the fixer speaks with its own system prompt
    assert fix["system_prompt"] == "You fix code."


def test_compact_fidelity_is_a_template_with_a_fetch_hint(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(project, fidelity="fidelity: compact")
    result = swell("run", "impl", "--input", "feature X", cwd=project)
    assert result.returncode == 0, result.stdout
    run_id = run_id_of(result.stdout)
    second = calls(project)[1]
    prompt = second["prompt"]
    assert second["resume_session"] is None
    assert "## Where this thread stands (impl)\nGoal: feature X" in prompt
    assert "- #1 implement: success" in prompt
    assert "- #2 run-tests: failure; exit 1\n    | FAILED test_feature: found 1 lines" in prompt
    assert "Context:\n- passed = false" in prompt
    assert f"thread {run_id} --thread impl" in prompt and "First try" not in prompt


def test_summary_fidelity_uses_the_summarizer_and_falls_back_to_compact(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(project, fidelity="fidelity: summary")
    result = swell("run", "impl", "--input", "feature X", cwd=project)
    assert result.returncode == 0, result.stdout
    requests = calls(project)
    summary_call = next(c for c in requests if c["step_id"] == "implement.summary")
    assert (
        "First try: wrote one line." in summary_call["prompt"]
        and "FAILED test_feature" in summary_call["prompt"]
    )
    second = [c for c in requests if c["step_id"] == "implement"][1]
    assert (
        "## Summary of this thread so far (impl)\nSUMMARY: one line written, test_feature failed."
        in second["prompt"]
    )
    evs = events(project, run_id_of(result.stdout))
    assert [e["upto_round"] for e in evs if e["type"] == "thread.summarized"] == [2]

    # without a reply for the summarizer, the visit gets the compact view and a warning
    setup(
        project,
        fidelity="fidelity: summary",
        replies=REPLIES.split("  - {step: implement.summary")[0],
    )
    (project / "calls.jsonl").unlink()
    again = swell("run", "impl", "--input", "feature X", cwd=project)
    assert again.returncode == 0, again.stdout
    second = [c for c in calls(project) if c["step_id"] == "implement"][1]
    assert "## Where this thread stands (impl)" in second["prompt"]
    evs = events(project, run_id_of(again.stdout))
    assert any(
        "summarizer unavailable" in e.get("message", "") for e in evs if e["type"] == "warning"
    )
    assert [e["fidelity"] for e in evs if e["type"] == "thread.context"][-1] == "compact"


def test_steps_without_a_thread_and_other_runs_get_nothing(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(project)
    pipeline = (project / ".agents/pipelines/impl.yaml").read_text()
    (project / ".agents/pipelines/impl.yaml").write_text(
        pipeline.replace("    thread: impl\n", "", 1)
    )
    assert swell("run", "impl", "--input", "x", cwd=project).returncode == 0
    assert all(
        "Earlier in this thread" not in c["prompt"] and c["resume_session"] is None
        for c in calls(project)
    )

    setup(project)
    (project / "calls.jsonl").unlink()
    assert swell("run", "impl", "--input", "x", cwd=project).returncode == 0
    assert swell("run", "impl", "--input", "x", cwd=project).returncode == 0
    firsts = [c for c in calls(project) if c["visit"] == 1]
    assert len(firsts) == 2 and all(c["resume_session"] is None for c in firsts)


def test_swell_thread_pages_through_a_run(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    setup(project)
    run_id = run_id_of(swell("run", "impl", "--input", "feature X", cwd=project).stdout)
    whole = swell("thread", run_id, "--thread", "impl", cwd=project)
    assert whole.returncode == 0
    headers = re.findall(r"^\[#(\d+) ([\w-]+)\] \d{4}-\d\d-\d\dT[\d:.]+Z$", whole.stdout, re.M)
    assert headers == [
        ("1", "implement"),
        ("2", "run-tests"),
        ("3", "implement"),
        ("4", "run-tests"),
    ]
    assert "---\noutcome: failure\nexit_code: 1\n" in whole.stdout
    assert "adapter: scripted\nmodel: null" not in whole.stdout  # nulls are left out

    # following each printed hint, exactly as printed, shows every round once
    seen: list[int] = []
    pages = 0
    command = ["thread", run_id, "--thread", "impl"]
    while True:
        pages += 1
        page = swell(*command, "--budget", "150", cwd=project).stdout
        seen += [int(n) for n in re.findall(r"^\[#(\d+) ", page, re.M)]
        hint = re.search(
            r"\.\.\. \d+ messages omitted \(use --before \d+ to load: swell (thread .*)\) \.\.\.",
            page,
        )
        if not hint:
            break
        command = hint.group(1).split()
    assert sorted(seen) == [1, 2, 3, 4] and len(seen) == 4 and pages > 1

    data = swell_json("thread", run_id, cwd=project)
    assert data["total"] == 4 and [r["role"] for r in data["rounds"]][:2] == [
        "implement",
        "run-tests",
    ]
    assert swell("thread", "no-such-run", cwd=project).returncode == 1


def test_threads_survive_kill_9_and_resume(tmp_path: Path) -> None:
    import os
    import signal

    from conftest import start_swell

    project = tmp_path / "p"
    project.mkdir()
    setup(project)
    pipeline = (project / ".agents/pipelines/impl.yaml").read_text()
    (project / ".agents/pipelines/impl.yaml").write_text(
        pipeline.replace("      n=$(grep", "      sleep 1\n      n=$(grep")
    )
    proc = start_swell("run", "impl", "--input", "feature X", "-o", "json", cwd=project)
    assert proc.stdout is not None
    run_id = ""
    for line in proc.stdout:
        event = json.loads(line)
        run_id = event["run_id"]
        if event["type"] == "step.started" and event["step_id"] == "run-tests":
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    second = [c for c in calls(project) if c["step_id"] == "implement"][1]
    assert second["resume_session"] == "sess-1"
    assert "FAILED test_feature: found 1 lines" in second["prompt"]
    rounds = swell_json("thread", run_id, "--thread", "impl", cwd=project)["rounds"]
    assert [r["role"] for r in rounds] == ["implement", "run-tests", "implement", "run-tests"]


def test_two_threads_and_a_sub_pipeline_keep_their_histories_apart(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (project / "wave.yaml").write_text(MANIFEST)
    (project / "replies.yaml").write_text("""
replies:
  - {step: a1, text: "ALPHA-ONE"}
  - {step: b1, text: "BETA-ONE"}
  - {step: a2, text: "alpha two"}
  - {step: b2, text: "beta two"}
  - {step: child, text: "child answer"}
""")
    write_pipeline(
        project,
        "kid",
        """
kind: WavePipeline
metadata: {name: kid}
steps:
  - id: child
    persona: coder
    thread: a
    exec: {type: prompt, source: "child task"}
""",
    )
    write_pipeline(
        project,
        "two",
        """
kind: WavePipeline
metadata: {name: two}
steps:
  - {id: a1, persona: coder, thread: a, exec: {type: prompt, source: "a one"}}
  - {id: b1, persona: coder, thread: b, dependencies: [a1], exec: {type: prompt, source: "b one"}}
  - {id: a2, persona: fixer, thread: a, dependencies: [b1], exec: {type: prompt, source: "a two"}}
  - {id: b2, persona: fixer, thread: b, dependencies: [a2], exec: {type: prompt, source: "b two"}}
  - {id: sub, pipeline: kid, dependencies: [b2]}
""",
    )
    result = swell("run", "two", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    by_step = {c["step_id"]: c["prompt"] for c in calls(project)}
    assert "ALPHA-ONE" in by_step["a2"] and "BETA-ONE" not in by_step["a2"]
    assert "BETA-ONE" in by_step["b2"] and "ALPHA-ONE" not in by_step["b2"]
    # the child run's thread `a` is its own: nothing of the parent's thread `a`
    assert by_step["child"] == "child task"
