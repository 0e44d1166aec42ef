"""Wave's artifact hand-over from the CLI: explicit injection at `.agents/artifacts/<as>`,
dependency auto-injection (files, the `.agents/output` alias, `WAVE_DEP_*`,
`{{ deps.* }}`), and an agent's final answer written to an output it did not write."""

from __future__ import annotations

from pathlib import Path

from conftest import run_id_of, swell, write_pipeline


def _use_script(project: Path, replies: str) -> None:
    (project / "scripts" / "wave.yaml").write_text(replies)
    manifest = (project / "wave.yaml").read_text()
    (project / "wave.yaml").write_text(
        manifest.replace("script: scripts/agent-replies.yaml", "script: scripts/wave.yaml")
    )


def test_explicit_injection_lands_at_agents_artifacts_with_the_wave_alias(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(
        project,
        "inject",
        """
kind: WavePipeline
metadata: {name: inject}
steps:
  - id: plan
    type: command
    script: mkdir -p out && echo "the plan" > out/plan.md
    output_artifacts: [{name: plan, path: out/plan.md, required: true}]
  - id: build
    type: command
    dependencies: [plan]
    memory:
      inject_artifacts: [{step: plan, artifact: plan, as: the_plan}]
    script: |
      cat .agents/artifacts/the_plan .wave/artifacts/the_plan
      echo "named {{ artifacts.the_plan }}"
""",
    )
    result = swell("run", "inject", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    ws = isolated_state / "workspaces" / run_id
    assert (ws / ".agents" / "artifacts" / "the_plan").read_text() == "the plan\n"
    logs = swell("logs", run_id, "--step", "build", cwd=project).stdout
    assert logs.count("| the plan") == 2
    assert f"named {ws.resolve()}/.agents/artifacts/the_plan" in logs


def test_dependencies_are_auto_injected_for_command_steps(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(
        project,
        "deps",
        """
kind: WavePipeline
metadata: {name: deps}
steps:
  - id: scan
    type: command
    script: |
      mkdir -p .agents/output reports
      echo '{"n": 1}' > .agents/output/findings.json
      echo "summary" > reports/summary.md
    output_artifacts:
      - {name: findings, path: .agents/output/findings.json, type: json}
      - {name: summary, path: reports/summary.md}
  - id: fix-it
    type: command
    dependencies: [scan]
    script: |
      cat .agents/artifacts/scan/findings.json .agents/artifacts/scan/summary.md
      cat .agents/output/summary.md
      echo "env $WAVE_DEP_SCAN_FINDINGS dir $WAVE_DEPS_DIR"
      echo "deps {{ deps.scan.summary }}"
      echo "arts {{ artifacts.scan.findings }}"
""",
    )
    result = swell("run", "deps", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    ws = (isolated_state / "workspaces" / run_id).resolve()
    logs = swell("logs", run_id, "--step", "fix-it", cwd=project).stdout
    assert '| {"n": 1}' in logs and logs.count("| summary") == 2
    arts = ws / ".agents" / "artifacts"
    assert f"env {arts}/scan/findings.json dir {arts}" in logs
    assert f"deps {arts}/scan/summary.md" in logs
    assert f"arts {arts}/scan/findings.json" in logs


def test_a_missing_required_dependency_artifact_fails_the_consumer(project: Path) -> None:
    write_pipeline(
        project,
        "deps",
        """
kind: WavePipeline
metadata: {name: deps}
steps:
  - id: scan
    type: command
    script: "true"
    output_artifacts: [{name: findings, path: findings.json, required: false}]
  - id: use
    type: command
    dependencies: [scan]
    script: echo "never"
""",
    )
    ok = swell("run", "deps", cwd=project)
    assert ok.returncode == 0, ok.stdout  # an optional one that is missing is fine
    (project / ".agents" / "pipelines" / "deps.yaml").write_text(
        (project / ".agents" / "pipelines" / "deps.yaml")
        .read_text()
        .replace("required: false", "required: true")
    )
    failed = swell("run", "deps", cwd=project)
    assert failed.returncode == 1
    assert "required artifact 'findings'" in failed.stdout


def test_an_agent_that_answers_instead_of_writing_fills_its_output(
    project: Path, isolated_state: Path
) -> None:
    _use_script(
        project,
        """
replies:
  - step: report
    text: "# Report\\n\\nAll good."
  - step: keep
    text: "not this"
    files: {kept.md: "written by the agent"}
""",
    )
    write_pipeline(
        project,
        "answer",
        """
kind: WavePipeline
metadata: {name: answer}
steps:
  - id: report
    persona: implementer
    exec: {type: prompt, source: "Write the report."}
    output_artifacts: [{name: report, path: .agents/output/report.md, required: true}]
  - id: keep
    persona: implementer
    dependencies: [report]
    exec: {type: prompt, source: "Write kept.md."}
    output_artifacts: [{name: kept, path: kept.md, required: true}]
""",
    )
    result = swell("run", "answer", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    ws = isolated_state / "workspaces" / run_id_of(result.stdout)
    assert (ws / ".agents" / "output" / "report.md").read_text() == "# Report\n\nAll good."
    assert (ws / "kept.md").read_text() == "written by the agent"
