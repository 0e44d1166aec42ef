"""What Wave's constructs do at run time, not only at validation: each test runs a
pipeline of our own through the CLI, as a user would, and checks what the user sees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import events, run_id_of, swell, swell_cmd, write_pipeline

MANIFEST = """\
apiVersion: v1
kind: WaveManifest
metadata: {name: wave-runtime}
adapters:
  scripted:
    options: {script: replies.yaml, calls: calls.jsonl}
personas:
  github-commenter:
    adapter: scripted
    system_prompt: "You comment on GitHub."
  gitlab-commenter:
    adapter: scripted
    system_prompt: "You comment on GitLab."
  navigator:
    adapter: scripted
    system_prompt: "You plan."
  reviewer:
    adapter: scripted
    system_prompt: "You review."
  scout:
    adapter: scripted
runtime:
  workspace_root: .agents/workspaces
"""


def _project(tmp_path: Path, replies: str, remote: str | None = None) -> Path:
    root = tmp_path / "wave-runtime"
    root.mkdir()
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "replies.yaml").write_text(replies)
    if remote:
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "remote", "add", "origin", remote], check=True)
    return root


GITHUB = "git@github.com:acme/rocket.git"
# a step whose persona is named by the project's forge, as Wave's publishing steps are
COMMENT = """\
kind: WavePipeline
metadata: {name: comment}
steps:
  - id: publish
    persona: "{{ forge.type }}-commenter"
    exec: {type: prompt, source: "Post the comment."}
"""


def _calls(root: Path) -> list[dict[str, object]]:
    path = root / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize(
    ("remote", "persona"),
    [
        ("git@github.com:acme/rocket.git", "github-commenter"),
        ("https://gitlab.com/acme/rocket.git", "gitlab-commenter"),
    ],
)
def test_a_templated_persona_name_is_rendered_before_it_is_looked_up(
    tmp_path: Path, remote: str, persona: str
) -> None:
    root = _project(tmp_path, "replies:\n  - text: posted\n", remote)
    write_pipeline(root, "comment", COMMENT)
    result = swell("run", "comment", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    started = [e for e in events(root, run_id_of(result.stdout)) if e["type"] == "step.started"]
    assert [e["persona"] for e in started] == [persona]
    (call,) = _calls(root)
    assert call["system_prompt"].startswith(
        "You comment on GitHub." if persona.startswith("github") else "You comment on GitLab."
    )


def test_a_templated_persona_that_names_no_persona_fails_the_step_clearly(tmp_path: Path) -> None:
    root = _project(
        tmp_path, "replies:\n  - text: posted\n", "https://codeberg.org/acme/rocket.git"
    )
    write_pipeline(root, "comment", COMMENT)
    result = swell("run", "comment", cwd=root)
    assert result.returncode == 1
    assert "unknown persona 'codeberg-commenter'" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_dry_run_names_the_persona_and_model_the_run_uses(tmp_path: Path) -> None:
    """`routing.auto_route` picks a tier by persona name (navigator: cheapest); the plan
    and the run agree on it, and on a templated persona."""
    root = _project(tmp_path, "replies:\n  - text: planned\n  - text: posted\n", GITHUB)
    manifest = root / "wave.yaml"
    manifest.write_text(
        manifest.read_text()
        .replace(
            "    options: {script: replies.yaml, calls: calls.jsonl}",
            "    options: {script: replies.yaml, calls: calls.jsonl}\n"
            "    tier_models: {cheapest: small-model, balanced: mid-model}",
        )
        .replace("runtime:\n", "runtime:\n  routing: {auto_route: true}\n")
    )
    write_pipeline(
        root,
        "routed",
        """\
kind: WavePipeline
metadata: {name: routed}
steps:
  - id: plan
    persona: navigator
    exec: {type: prompt, source: "Plan."}
  - id: publish
    persona: "{{ forge.type }}-commenter"
    dependencies: [plan]
    exec: {type: prompt, source: "Post."}
""",
    )
    plan = swell("run", "routed", "--dry-run", "-o", "json", cwd=root)
    assert plan.returncode == 0, plan.stderr
    planned = {
        step["id"]: (agent["persona"], agent["model"])
        for step in json.loads(plan.stdout)["steps"]
        for agent in step["agents"]
    }
    assert planned == {
        "plan": ("navigator", "small-model"),
        "publish": ("github-commenter", "mid-model"),
    }
    result = swell("run", "routed", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert {c["step_id"]: c["model"] for c in _calls(root)} == {
        step: model for step, (_, model) in planned.items()
    }


REWORK = """\
kind: WavePipeline
metadata: {name: rework}
steps:
  - id: implement
    type: command
    script: echo draft > work.txt
    handover:
      contracts:
        - type: test_suite
          command: grep -q reviewed work.txt
          on_failure: rework
          rework_step: fix
  - id: fix
    type: command
    rework_only: true
    script: echo reviewed > work.txt
    handover:
      contracts:
        - type: test_suite
          command: "FIX_CHECK"
"""


@pytest.mark.parametrize(("own_check", "status"), [("false", "failed"), ("true", "succeeded")])
def test_a_rework_step_is_held_to_its_own_contracts(
    tmp_path: Path, own_check: str, status: str
) -> None:
    root = _project(tmp_path, "replies: []\n")
    write_pipeline(root, "rework", REWORK.replace("FIX_CHECK", own_check))
    result = swell("run", "rework", cwd=root)
    run = json.loads(swell("status", run_id_of(result.stdout), "-o", "json", cwd=root).stdout)
    assert run["status"] == status, result.stdout
    if status == "failed":
        assert result.returncode == 1
        assert "contract 1 (test_suite) of step 'fix' failed" in result.stdout


def test_step_output_with_a_path_reads_the_first_artifact_that_has_it(tmp_path: Path) -> None:
    """`{{ scan.output.items }}` finds `items` in scan's second artifact (Wave tries each);
    `{{ scan.output }}` alone is the first."""
    root = _project(tmp_path, "replies: []\n")
    write_pipeline(
        root,
        "outputs",
        """\
kind: WavePipeline
metadata: {name: outputs}
steps:
  - id: scan
    type: command
    script: |
      echo '{"count": 2}' > summary.json
      echo '{"items": ["a", "b"]}' > plan.json
    output_artifacts:
      - {name: summary, path: summary.json, type: json}
      - {name: plan, path: plan.json, type: json}
  - id: gather
    dependencies: [scan]
    aggregate:
      from: '{"items": {{ scan.output.items }}, "whole": {{ scan.output }}}'
      into: .agents/output/gathered.json
      strategy: concat
""",
    )
    result = swell("run", "outputs", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    listed = json.loads(swell("artifacts", run_id_of(result.stdout), "-o", "json", cwd=root).stdout)
    (gathered,) = [a["path"] for a in listed if a["name"] == "gathered"]
    assert json.loads(Path(gathered).read_text()) == {"items": ["a", "b"], "whole": {"count": 2}}


def test_a_templated_output_path_is_rendered_in_the_prompt_and_when_collected(
    tmp_path: Path,
) -> None:
    root = _project(
        tmp_path, "replies:\n  - text: done\n    files: {out/feature-x.next.yaml: 'next: 1'}\n"
    )
    write_pipeline(
        root,
        "evolve",
        """\
kind: WavePipeline
metadata: {name: evolve}
steps:
  - id: propose
    persona: navigator
    exec: {type: prompt, source: "Propose the next version of {{ input }}."}
    output_artifacts:
      - {name: next, path: "out/{{ input }}.next.yaml", type: text}
""",
    )
    result = swell("run", "evolve", "--input", "feature-x", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    (call,) = _calls(root)
    assert "out/feature-x.next.yaml" in call["prompt"]
    assert "{{" not in call["prompt"]
    listed = json.loads(swell("artifacts", run_id_of(result.stdout), "-o", "json", cwd=root).stdout)
    (path,) = [a["path"] for a in listed if a["name"] == "next"]
    assert path.endswith("out/feature-x.next.yaml")
    assert Path(path).read_text() == "next: 1"


def test_the_contract_schema_and_checks_reach_the_prompt(tmp_path: Path) -> None:
    """As Wave's "Output Requirements": the agent is told the schema its JSON must meet
    (with the required fields and a skeleton), the test command, and that a reviewer
    will judge it, before it works."""
    schema = {
        "type": "object",
        "required": ["title", "priority", "done"],
        "properties": {
            "title": {"type": "string"},
            "priority": {"enum": ["high", "low"]},
            "done": {"type": "boolean"},
        },
    }
    root = _project(
        tmp_path,
        "replies:\n"
        "  - step: plan\n"
        "    text: done\n"
        '    files: {out/plan.json: \'{"title": "t", "priority": "low", "done": true}\'}\n'
        "  - step: plan.review\n"
        '    text: \'{"verdict": "pass", "issues": [], "summary": "ok", "confidence": 0.9}\'\n',
    )
    (root / "plan.schema.json").write_text(json.dumps(schema))
    write_pipeline(
        root,
        "planned",
        """\
kind: WavePipeline
metadata: {name: planned}
steps:
  - id: plan
    persona: navigator
    exec: {type: prompt, source: "Plan it."}
    output_artifacts:
      - {name: plan, path: out/plan.json, type: json}
    handover:
      contracts:
        - {type: json_schema, schema_path: plan.schema.json}
        - {type: test_suite, command: "test -s out/plan.json"}
        - {type: agent_review, persona: reviewer}
""",
    )
    result = swell("run", "planned", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    prompt = _calls(root)[0]["prompt"]
    assert "## Output requirements" in prompt
    assert '"required": [' in prompt and '"priority"' in prompt
    assert "Required fields: `title`, `priority`, `done`" in prompt
    assert '"priority": "high"' in prompt and '"done": false' in prompt  # the skeleton
    assert "`out/plan.json` must be valid JSON conforming to this schema" in prompt
    assert "test -s out/plan.json" in prompt
    assert "a separate reviewer (persona `reviewer`)" in prompt


def test_wave_pipeline_context_names_render(tmp_path: Path) -> None:
    root = _project(tmp_path, "replies: []\n", GITHUB)
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "-b", "042-add-login"], check=True)
    write_pipeline(
        root,
        "names",
        """\
kind: WavePipeline
metadata: {name: names}
steps:
  - id: show
    type: command
    script: >-
      echo "{{ pipeline_context.pipeline_name }}/{{ pipeline_context.step_id }}
      {{ pipeline_context.branch_name }} {{ pipeline_context.feature_num }}
      {{ pipeline_context.pipeline_id }}"
""",
    )
    result = swell("run", "names", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    shown = swell("logs", run_id, "--step", "show", cwd=root).stdout
    assert f"names/show 042-add-login 042-add-login {run_id}" in shown


def test_an_error_wrapper_around_prose_fails_the_schema_contract(tmp_path: Path) -> None:
    """Wave's envelope whose raw_output is no JSON is not the document, even though the
    envelope itself would pass the schema."""
    root = _project(tmp_path, "replies: []\n")
    wrapper = {"error_type": "timeout", "raw_output": "ran out of time", "step_id": "x"}
    write_pipeline(
        root,
        "wrapped",
        f"""\
kind: WavePipeline
metadata: {{name: wrapped}}
steps:
  - id: emit
    type: command
    script: |
      echo '{json.dumps(wrapper)}' > out.json
    output_artifacts: [{{name: out, path: out.json, type: json}}]
    handover:
      contract: {{type: json_schema, schema: '{{"type": "object"}}'}}
""",
    )
    result = swell("run", "wrapped", cwd=root)
    assert result.returncode == 1
    assert "is an error wrapper (timeout) whose raw_output is not JSON" in result.stdout


def test_the_base_protocol_and_a_personas_own_file_make_its_system_prompt(
    tmp_path: Path,
) -> None:
    """As Wave: `.agents/personas/base-protocol.md` comes first for every step's agent,
    and a persona without a system prompt of its own reads `.agents/personas/NAME.md`."""
    root = _project(tmp_path, "replies:\n  - text: looked\n")
    personas = root / ".agents" / "personas"
    personas.mkdir(parents=True)
    (personas / "base-protocol.md").write_text("# Protocol\nRun-ID: {{ run.id }}\n")
    (personas / "scout.md").write_text("# Scout\nYou look around.\n")
    write_pipeline(
        root,
        "look",
        """\
kind: WavePipeline
metadata: {name: look}
steps:
  - id: look
    persona: scout
    exec: {type: prompt, source: "Look."}
""",
    )
    result = swell("run", "look", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    (call,) = _calls(root)
    assert call["system_prompt"].startswith(
        f"# Protocol\nRun-ID: {run_id_of(result.stdout)}\n\n\n# Scout\nYou look around.\n"
    )


def test_a_huge_step_output_is_read_only_up_to_its_cap(tmp_path: Path) -> None:
    """`{{ scan.out.big }}` of a 600 MB file reads 50 MiB, not the file (issue 28)."""
    root = _project(tmp_path, "replies: []\n")
    write_pipeline(
        root,
        "huge",
        """\
kind: WavePipeline
metadata: {name: huge}
steps:
  - id: scan
    type: command
    script: truncate -s 600M big.bin
    output_artifacts: [{name: big, path: big.bin, type: binary}]
  - id: gather
    dependencies: [scan]
    aggregate: {from: "{{ scan.out.big }}", into: .agents/output/head.txt, strategy: concat}
""",
    )
    # a parent of its own, so the peak is this run's alone
    measure = (
        "import resource, subprocess, sys; run = subprocess.run(sys.argv[1:]); "
        "print(run.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, *swell_cmd("run", "huge")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    code, peak_kib = map(int, done.stdout.split()[-2:])
    assert code == 0, done.stdout + done.stderr
    assert peak_kib < 300 * 1024, f"swell peaked at {peak_kib // 1024} MiB"
