"""runtime.routing.rules/default as Wave's router decides (cases after Wave's
internal/pipeline/router_test.go), `swell route` showing the choice, and `swell watch`
without a PIPELINE routing each item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import swell, wait_for
from swell.manifest.wave_models import RoutingConfig
from swell.service.routing import pattern_matches, route

from .helpers import MANIFEST, dispatched, enqueue, service_project

COMPLEX = RoutingConfig.model_validate(
    {
        "default": "general-pipeline",
        "rules": [
            {"pattern": "security", "pipeline": "security-pipeline", "priority": 100},
            {"pipeline": "feature-pipeline", "priority": 50, "match_labels": {"type": "feature"}},
            {"pipeline": "bugfix-pipeline", "priority": 50, "match_labels": {"type": "bug"}},
            {"pattern": "refactor", "pipeline": "refactor-pipeline", "priority": 10},
            {"pattern": "docs", "pipeline": "docs-pipeline", "priority": 10},
        ],
    }
)


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("fix security vulnerability", {"type": "bug"}, "security-pipeline"),
        ("add new feature", {"type": "feature"}, "feature-pipeline"),
        ("fix crash", {"type": "bug"}, "bugfix-pipeline"),
        ("refactor authentication module", None, "refactor-pipeline"),
        ("update docs for API", None, "docs-pipeline"),
        ("some random task", None, "general-pipeline"),
    ],
)
def test_waves_complex_routing_scenario(
    text: str, labels: dict[str, str] | None, expected: str
) -> None:
    assert route(COMPLEX, text, labels).pipeline == expected


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("fix*", "fix bug", True),  # * crosses spaces
        ("fix*", "fixing", True),
        ("fix*", "something else", False),
        ("FIX*", "fix it", True),  # then case-insensitively
        ("bug", "There is a BUG here", True),  # no wildcard: a substring
        ("*.go", "a/b.go", False),  # filepath.Match: * stops at /
        ("issue-[0-9]", "issue-7", True),
        ("issue-[^0-9]", "issue-7", False),
        ("[", "[", False),  # a malformed pattern matches nothing
        ("spaced", "  spaced  ", True),  # the input is trimmed
    ],
)
def test_patterns_match_as_gos_filepath_match_then_substring(
    pattern: str, text: str, matches: bool
) -> None:
    assert pattern_matches(pattern, text) is matches


def test_equal_priorities_keep_file_order_and_no_default_routes_nothing() -> None:
    config = RoutingConfig.model_validate(
        {"rules": [{"pattern": "a*", "pipeline": "one"}, {"pattern": "ab*", "pipeline": "two"}]}
    )
    assert route(config, "abc").pipeline == "one"
    nothing = route(config, "zzz")
    assert nothing.pipeline is None and "default is not set" in nothing.why


ROUTING = """\
  routing:
    default: echo
    rules:
      - {pattern: "deploy*", pipeline: deploy, priority: 5}
      - {pipeline: urgent, match_labels: {team: ops}}
"""


def _routed_project(root: Path) -> Path:
    deploy = "kind: WavePipeline\nmetadata: {name: deploy}\nsteps:\n  - {id: d, type: command, script: echo deploy}\n"
    project = service_project(root, deploy=deploy)
    manifest = MANIFEST.replace("runtime: {workspace_root: .agents/workspaces}\n", "")
    (project / "wave.yaml").write_text(
        manifest + "runtime:\n  workspace_root: .agents/workspaces\n" + ROUTING
    )
    return project


def test_swell_route_shows_the_pipeline_and_the_rule(tmp_path: Path) -> None:
    project = _routed_project(tmp_path / "p")
    validate = swell("validate", cwd=project)
    assert "routing" not in validate.stdout + validate.stderr  # no "does not run" warning
    shown = swell("route", "deploy the api", cwd=project)
    assert shown.returncode == 0
    assert shown.stdout.strip() == "deploy  (rule 1 (pattern 'deploy*', priority 5))"
    labelled = swell("route", "restart", "--label", "team=ops", "--json", cwd=project)
    assert json.loads(labelled.stdout)["pipeline"] == "urgent"
    assert json.loads(labelled.stdout)["rule"] == 1
    fallback = swell("route", "something", cwd=project)
    assert "echo  (no rule matched: runtime.routing.default)" in fallback.stdout


def test_watch_without_a_pipeline_routes_each_item(tmp_path: Path, isolated_state: Path) -> None:
    project = _routed_project(tmp_path / "p")
    queue = project / "queue.jsonl"
    with queue.open("w") as out:
        out.write(json.dumps({"id": "1", "input": "deploy v2"}) + "\n")
        out.write(json.dumps({"id": "2", "input": "say hi"}) + "\n")
        out.write(json.dumps({"id": "3", "input": "page", "labels": {"team": "ops"}}) + "\n")
    result = swell("watch", "--source", "file:queue.jsonl", "--once", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "item 1: run deploy-" in result.stdout and "item 2: run echo-" in result.stdout
    assert "item 3: skipped (rule 2 (team='ops', priority 0) chose urgent:" in result.stdout
    rows = dispatched(isolated_state, "file:queue.jsonl")
    assert sorted(rows) == ["1", "2"]
    wait_for(lambda: len(rows) == 2)
    enqueue(queue, "4")
    assert (
        "item 4: run echo-"
        in swell("watch", "--source", "file:queue.jsonl", "--once", cwd=project).stdout
    )
