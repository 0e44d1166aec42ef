"""Wave's forge and git variables, gate decisions in templates, skills, token scopes
and step outcomes, driven from the CLI on fixture git repositories (no network)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline

# a stand-in for each forge's CLI: a shell function, so no real `gh` ever runs
FAKE_CLIS = "".join(f'{c}() {{ echo "{c} ran: $*"; }}\n' for c in ("gh", "glab", "tea", "bb"))

FORGE_PIPELINE = f"""
kind: WavePipeline
metadata: {{name: forge-info}}
steps:
  - id: show
    type: command
    script: |
{"".join("      " + line + chr(10) for line in FAKE_CLIS.splitlines())}      echo "type={{{{ forge.type }}}} host={{{{ forge.host }}}} slug={{{{ forge.owner }}}}/{{{{ forge.repo }}}}"
      echo "prefix={{{{ forge.prefix }}}} term={{{{ forge.pr_term }}}} cmd={{{{ forge.pr_command }}}}"
      echo "branch={{{{ branch_name }}}} feature={{{{ feature_num }}}}"
      {{{{ forge.cli_tool }}}} issue create --title "x"
"""


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True)


def _repo(project: Path, remote: str | None, branch: str = "main") -> None:
    _git(project, "init", "-q", "-b", branch)
    if remote:
        _git(project, "remote", "add", "origin", remote)


def _logs(project: Path, run_id: str, step: str) -> str:
    return swell("logs", run_id, "--step", step, cwd=project).stdout


@pytest.mark.parametrize(
    ("remote", "branch", "expected"),
    [
        (
            "git@github.com:acme/rocket.git",
            "042-add-login",
            ["type=github host=github.com slug=acme/rocket", "prefix=gh term=Pull Request cmd=pr",
             "branch=042-add-login feature=042-add-login", "gh ran: issue create --title x"],
        ),
        (
            "https://gitlab.com/acme/sub/rocket.git",
            "feature/7-search",
            ["type=gitlab host=gitlab.com slug=acme/sub/rocket",
             "prefix=gl term=Merge Request cmd=mr", "branch=feature/7-search feature=feature/007-search",
             "glab ran: issue create --title x"],
        ),
    ],
)  # fmt: skip
def test_forge_and_branch_variables_come_from_the_repository(
    project: Path, remote: str, branch: str, expected: list[str]
) -> None:
    _repo(project, remote, branch)
    write_pipeline(project, "forge-info", FORGE_PIPELINE)
    result = swell("run", "forge-info", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    logs = _logs(project, run_id_of(result.stdout), "show")
    for line in expected:
        assert line in logs, logs


def test_a_pipeline_that_runs_the_forge_cli_is_refused_without_a_forge(project: Path) -> None:
    _repo(project, None)
    write_pipeline(project, "forge-info", FORGE_PIPELINE)
    result = swell("run", "forge-info", cwd=project)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "steps show run the forge's CLI" in result.stderr
    assert "the project has no forge (no git remote)" in result.stderr
    assert "set metadata.forge" in result.stderr


def test_metadata_forge_is_honoured_without_a_remote(project: Path) -> None:
    _repo(project, None)
    manifest = project / "wave.yaml"
    manifest.write_text(
        manifest.read_text().replace("  name: swell-examples", "  name: x\n  forge: gitea")
    )
    write_pipeline(project, "forge-info", FORGE_PIPELINE)
    result = swell("run", "forge-info", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    logs = _logs(project, run_id_of(result.stdout), "show")
    assert "type=gitea host= slug=/" in logs and "tea ran: issue create" in logs


def test_validate_accepts_wildcard_prose_and_renders_it_verbatim(project: Path) -> None:
    write_pipeline(
        project,
        "prose",
        """
kind: WavePipeline
metadata: {name: prose}
steps:
  - id: say
    type: command
    script: echo 'use {{ project.* }} and {{ gate.*.text }} values'
""",
    )
    checked = swell("validate", "prose", cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    result = swell("run", "prose", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "use {{ project.* }} and {{ gate.*.text }} values" in _logs(
        project, run_id_of(result.stdout), "say"
    )


GATE_PIPELINE = """
kind: WavePipeline
metadata: {name: decide}
steps:
  - id: pick
    gate:
      message: "Which way?"
      choices:
        - {label: "Ship it", key: ship, target: after}
        - {label: "Hold", key: hold, target: _fail}
  - id: after
    type: command
    dependencies: [pick]
    script: |
      echo "choice={{ gate.pick.choice }} key={{ gate.pick.key }} target={{ gate.pick.target }}"
      echo "text={{ gate.pick.text }} at={{ gate.pick.timestamp }}"
"""


def test_gate_decisions_render_as_gate_variables(project: Path) -> None:
    write_pipeline(project, "decide", GATE_PIPELINE)
    proc = start_swell("run", "decide", "--wait", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
    note = "looks good {{ input }}"
    approved = swell("approve", run_id, "--choice", "ship", "--text", note, cwd=project)
    assert approved.returncode == 0, approved.stderr
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    logs = _logs(project, run_id, "after")
    assert "choice=Ship it key=ship target=after" in logs
    # `{{` and `}}` are taken out of what a person wrote, as Wave does
    assert "text=looks good  input  at=" in logs
    stamp = logs.split("at=")[1].split()[0]
    assert stamp[:4].isdigit() and "T" in stamp


OUTCOMES_PIPELINE = """
kind: WavePipeline
metadata: {name: deliver}
steps:
  - id: publish
    type: command
    script: |
      mkdir -p .agents/output
      cat > .agents/output/result.json <<'EOF'
      {"pr_url": "https://github.com/acme/rocket/pull/7", "count": 3,
       "issues": [{"url": "https://x/1", "title": "Fix A"}, {"url": "https://x/2", "title": ""}],
       "none": []}
      EOF
    outcomes:
      - {type: pr, extract_from: .agents/output/result.json, json_path: .pr_url, label: "Pull request"}
      - {type: issue, extract_from: .agents/output/result.json, json_path: ".issues[*].url",
         json_path_label: ".issues[*].title", label: Issue}
      - {type: url, extract_from: .agents/output/result.json, json_path: ".none[*].url"}
      - {type: url, extract_from: .agents/output/result.json, json_path: .missing}
      - {type: file, extract_from: .agents/output/result.json, label: Result}
      - {type: url, extract_from: ../../outside.json, json_path: .x}
"""


def test_outcomes_are_recorded_listed_and_never_fail_the_step(project: Path) -> None:
    write_pipeline(project, "deliver", OUTCOMES_PIPELINE)
    result = swell("run", "deliver", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    status = swell_json("status", run_id, cwd=project)
    got = [(o["type"], o["label"], o["value"]) for o in status["outcomes"]]
    assert got[:3] == [
        ("pr", "Pull request", "https://github.com/acme/rocket/pull/7"),
        ("issue", "Issue: Fix A", "https://x/1"),
        ("issue", "Issue (2/2)", "https://x/2"),
    ]
    assert got[3][0:2] == ("file", "Result") and got[3][2].endswith(".agents/output/result.json")
    assert len(got) == 4 and all(o["step_id"] == "publish" for o in status["outcomes"])
    warnings = [e["message"] for e in events(project, run_id) if e["type"] == "warning"]
    assert any(".none[*].url is an empty list" in w for w in warnings), warnings
    assert any("key 'missing' not found" in w for w in warnings), warnings
    assert any("escapes the workspace" in w for w in warnings), warnings
    text = swell("status", run_id, cwd=project).stdout
    assert "outcomes" in text and "Pull request: https://github.com/acme/rocket/pull/7" in text


SKILLS_PIPELINE = """
kind: WavePipeline
metadata: {name: skilled}
skills: [review-rules, "{{ project.skill }}"]
steps:
  - id: implement
    persona: implementer
    skills: [STEP_SKILL]
    exec: {type: prompt, source: "Do it."}
"""


def _skill(project: Path, base: str, name: str) -> None:
    folder = project / base / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name} rules\n---\nBody\n")


def test_missing_skills_refuse_the_run_before_it_starts(project: Path) -> None:
    _skill(project, "skills", "review-rules")
    write_pipeline(project, "skilled", SKILLS_PIPELINE.replace("STEP_SKILL", "nowhere"))
    result = swell("run", "skilled", cwd=project)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "step 'implement' names skill 'nowhere', which does not exist" in result.stderr


def test_skills_found_on_both_roots_and_an_adapter_without_skills_is_named(
    project: Path,
) -> None:
    _skill(project, "skills", "review-rules")
    _skill(project, ".agents/skills", "style")
    write_pipeline(project, "skilled", SKILLS_PIPELINE.replace("STEP_SKILL", "style"))
    result = swell("run", "skilled", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    warnings = [
        e["message"] for e in events(project, run_id_of(result.stdout)) if e["type"] == "warning"
    ]
    assert "adapter 'scripted' does not support skills; not given: review-rules, style" in warnings


def test_required_skill_checks_run_before_the_run(project: Path) -> None:
    pipeline = SKILLS_PIPELINE.replace("STEP_SKILL", "review-rules").replace(
        'skills: [review-rules, "{{ project.skill }}"]',
        "requires:\n  skills:\n    speckit: {check: 'test -f installed', install: 'touch installed'}\n"
        "    extra: {check: 'false', optional: true}",
    )
    _skill(project, "skills", "review-rules")
    write_pipeline(project, "skilled", pipeline)
    result = swell("run", "skilled", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (project / "installed").exists()
    assert "warning: skill 'extra' (requires.skills): its check `false` failed" in result.stderr
    broken = pipeline.replace("install: 'touch installed'", "install: 'true'")
    (project / "installed").unlink()
    write_pipeline(project, "skilled", broken)
    refused = swell("run", "skilled", cwd=project)
    assert refused.returncode != 0
    assert (
        "skill 'speckit' (requires.skills): its check `test -f installed` failed" in refused.stderr
    )


def test_token_scopes_warn_by_name_without_a_token_and_name_what_a_token_needs(
    project: Path,
) -> None:
    _repo(project, "https://github.com/acme/rocket.git")
    manifest = project / "wave.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "    system_prompt_file: .agents/personas/implementer.md",
            "    system_prompt_file: .agents/personas/implementer.md\n"
            "    token_scopes: [issues:write, pulls:read]",
        )
    )
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    plan = swell("run", "agent-loop", "--dry-run", cwd=project, env=env)
    assert (
        "warning: persona 'implementer' (token_scopes issues:write, pulls:read): no github token "
        "is set (GH_TOKEN or GITHUB_TOKEN)"
    ) in plan.stderr
    env["GITHUB_TOKEN"] = "ghp_not_a_real_token"
    plan = swell("run", "agent-loop", "--dry-run", cwd=project, env=env)
    assert "$GITHUB_TOKEN is set; swell does not ask github.com what it holds; it needs repo" in (
        plan.stderr
    )
