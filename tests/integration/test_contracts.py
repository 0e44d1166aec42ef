"""Contracts from the CLI: a review-driven rework loop end to end, and `swell validate`.
Order, every policy, retry and rework are tested in process in
tests/engine/test_contract_policies.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import events, run_id_of, swell, swell_json, write_pipeline

REWORK_HEADER = """The implementation was reviewed by reviewer and needs rework.
Review verdict: rework
Issues:
- [critical] debugging print left in library code (greeting.py:2)
- [major] greet has no docstring (greeting.py:1)
Suggestions:
- remove the print
- say in a docstring what greet returns
Full review: .wave/artifacts/review-feedback.json

"""


def _record_calls(project: Path) -> None:
    manifest = (project / "wave.yaml").read_text()
    (project / "wave.yaml").write_text(
        manifest.replace(
            "      script: scripts/impl-issue.yaml\n",
            "      script: scripts/impl-issue.yaml\n      calls: calls.jsonl\n",
        )
    )


def _calls(project: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def test_review_finds_a_critical_issue_and_rework_gets_exactly_the_feedback(
    project: Path, isolated_state: Path
) -> None:
    _record_calls(project)
    result = swell("run", "impl-issue", "--input", "add a greet(name) function", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    calls = _calls(project)
    assert [c["step_id"] for c in calls] == [
        "plan",
        "implement",
        "implement.review",
        "address-review",
        "address-review.review",
    ]
    rework = calls[3]
    assert rework["prompt"].startswith(REWORK_HEADER)
    ws = isolated_state / "workspaces" / run_id
    feedback = json.loads((ws / ".wave" / "artifacts" / "review-feedback.json").read_text())
    assert feedback["verdict"] == "rework" and len(feedback["issues"]) == 2
    # the reviewer saw the diff and the plan, never its own verdict's target persona
    review = calls[2]
    assert (
        "greeting.py" in review["prompt"] and "Add greeting.py with greet(name)" in review["prompt"]
    )
    assert (
        review["system_prompt"].count("verdict") >= 1
        and review["json_schema"]["title"] == "ReviewFeedback"
    )
    assert (ws / "greeting.py").read_text().splitlines()[
        1
    ] == '    """Return a greeting for `name`."""'

    status = swell_json("status", run_id, cwd=project)
    assert [s["step_id"] for s in status["steps"]] == [
        "plan",
        "implement",
        "address-review",
        "finish",
    ]
    reviews = status["reviews"]
    assert [(r["step_id"], r["verdict"], r["for_step"]) for r in reviews] == [
        ("implement", "rework", None),
        ("address-review", "pass", "implement"),
    ]
    assert reviews[0]["tokens_in"] == 1300 and reviews[0]["tokens_out"] == 140
    assert reviews[0]["issues"][0]["severity"] == "critical"
    kinds = [e["type"] for e in events(project, run_id)]
    assert kinds.count("review.started") == 2 and kinds.count("review.completed") == 2
    assert kinds.count("contract.failed") == 1 and kinds.count("contract.passed") == 3
    assert kinds.count("rework.requested") == 1


def test_run_adapter_option_also_runs_the_reviews(project: Path) -> None:
    """`swell run --adapter NAME` puts every agent on NAME, reviewers included, as Wave's
    --adapter does (its reviewer runs on the step's adapter); the dry run says so too."""
    manifest = (project / "wave.yaml").read_text()
    other = "  other:\n    type: scripted\n    options:\n      script: scripts/impl-issue.yaml\n"
    other += "      calls: calls.jsonl\n"
    (project / "wave.yaml").write_text(manifest.replace("adapters:\n", "adapters:\n" + other))
    argv = ("run", "impl-issue", "--adapter", "other", "--input", "add a greet(name) function")
    plan = json.loads(swell(*argv, "--dry-run", "-o", "json", cwd=project).stdout)
    implement = next(s for s in plan["steps"] if s["id"] == "implement")
    assert {(a["role"], a["adapter"]) for a in implement["agents"]} == {
        ("step", "other"),
        ("review", "other"),
    }
    result = swell(*argv, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "implement.review" in [c["step_id"] for c in _calls(project)]
    reviews = swell_json("status", run_id_of(result.stdout), cwd=project)["reviews"]
    assert reviews and {r["adapter"] for r in reviews} == {"other"}, reviews


def test_self_review_and_bad_contracts_are_rejected_by_validate(project: Path) -> None:
    write_pipeline(
        project,
        "selfie",
        """kind: WavePipeline
metadata: {name: selfie}
steps:
  - id: write
    persona: developer
    exec: {type: prompt, source: "write"}
    handover:
      contracts:
        - {type: agent_review, reviewer: developer}
        - {type: test_suite, command: "true"}
        - {type: non_empty_file}
        - {type: agent_review, reviewer: reviewer, on_failure: rework}
        - {type: llm_judge}
        - {type: spec_derived_test}
""",
    )
    result = swell("validate", "selfie", cwd=project)
    assert result.returncode == 1
    err = result.stderr
    assert (
        "selfie.yaml:9:42: self-review: the reviewer must not be the step's own persona 'developer'"
        in err
    )
    assert "warning: the test_suite contract runs after an agent_review" in err
    assert "a non_empty_file contract needs `source`" in err
    assert "on_failure: rework needs a `rework_step`" in err
    assert "an llm_judge contract needs at least one criterion" in err
    assert "unknown contract type 'spec_derived_test'" in err
