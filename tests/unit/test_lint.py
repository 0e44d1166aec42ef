"""`swell validate` checks on whole projects, each problem at the offending YAML node."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from manifest_helpers import MANIFEST, ProjectDir, at, make_project, only

from swell.engine.steps.registry import default_step_kinds
from swell.manifest.graph_checks import entry_steps
from swell.manifest.lint import lint_pipeline, lint_project
from swell.manifest.loader import load_pipeline, load_project, pipeline_paths
from swell.runtime import open_registries


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    return make_project(tmp_path, monkeypatch)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_example_project_lints_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root)
    monkeypatch.chdir(root)
    ctx = open_registries().lint_context()
    project = load_project(root)
    problems = lint_project(project, ctx).problems
    names = sorted(pipeline_paths(root))
    assert names == ["agent-loop", "hello", "impl-issue", "loop", "release", "review"]
    for name in names:
        problems += lint_pipeline(project, load_pipeline(root, name), ctx).errors
    assert problems == []


# ------------------------------------------------------------------------ references


def test_unknown_dependency_and_edge_target_and_duplicate_id(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            dependencies: [ghost]
          - id: b
            script: echo
            edges:
              - target: nowhere
          - id: a
            script: echo
        """
    )
    assert at(proj.lint()) == [
        (10, 9, "duplicate step id 'a'"),
        (5, 20, "unknown dependency 'ghost' (known: a, b)"),
        (9, 17, "edge to unknown step 'nowhere' (known: _complete, _fail, a, b)"),
    ]


def test_step_depending_on_itself(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            dependencies:
              - a
        """
    )
    assert at(proj.lint()) == [(6, 9, "step 'a' depends on itself")]


def test_unknown_persona_adapter_and_missing_prompt_file(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            persona: nobody
            exec: {source: hi}
          - id: b
            dependencies: [a]
            adapter: nope
            exec: {source: hi}
          - id: c
            dependencies: [b]
            persona: dev
            exec:
              source_path: prompts/missing.md
        """
    )
    assert at(proj.lint()) == [
        (4, 14, "unknown persona 'nobody' (known: dev)"),
        (8, 14, "unknown adapter 'nope' (known: claude, optioned, scripted)"),
        (14, 20, "prompt file prompts/missing.md does not exist"),
    ]


def test_existing_prompt_file_is_fine(proj: ProjectDir) -> None:
    proj.file("prompts/task.md", "Do {{ input }}\n")
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            persona: dev
            exec: {source_path: prompts/task.md}
        """
    )
    assert proj.lint() == []


def test_prompt_step_needs_a_persona_and_a_prompt(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            type: prompt
        """
    )
    assert at(proj.lint()) == [
        (3, 5, "prompt step 'a' needs a persona"),
        (3, 5, "prompt step 'a' needs exec.source or exec.source_path"),
    ]


def test_unknown_step_type(proj: ProjectDir) -> None:
    proj.pipeline("kind: WavePipeline\nsteps:\n  - id: a\n    type: grid\n")
    assert at(proj.lint()) == [
        (
            4,
            11,
            "unknown step type 'grid' (known: aggregate, branch, command, concurrency, "
            "conditional, gate, iterate, loop, matrix, pipeline, prompt)",
        )
    ]


def test_problems_in_wave_yaml_point_into_wave_yaml(proj: ProjectDir) -> None:
    proj.manifest(
        """
        kind: WaveManifest
        adapters:
          claude: {}
          mystery: {}
          plain:
            type: claude
            options: {x: 1}
          opt:
            type: optioned
            options:
              script: 5
        personas:
          dev:
            adapter: ghost
          nobody:
            description: no adapter here
          writer:
            adapter: claude
            system_prompt_file: personas/writer.md
        """
    )
    proj.pipeline("kind: WavePipeline\nsteps:\n  - id: a\n    script: echo\n")
    problems = proj.lint()
    assert {p.file for p in problems} == {"wave.yaml"}
    assert at(problems) == [
        (4, 3, "adapter type 'mystery' is not available (known: claude, optioned, scripted)"),
        (7, 5, "adapter type 'claude' takes no options"),
        (11, 15, "options.script: Input should be a valid string"),
        (
            14,
            14,
            "persona 'dev' uses unknown adapter 'ghost' (known: claude, mystery, opt, optioned, plain, scripted)",
        ),
        (15, 3, "persona 'nobody' has no adapter"),
        (19, 25, "system prompt file personas/writer.md does not exist"),
    ]


def test_persona_whose_adapter_type_is_unavailable(proj: ProjectDir) -> None:
    proj.manifest(
        """
        kind: WaveManifest
        adapters:
          fancy: {type: not-installed}
        personas:
          dev: {adapter: fancy}
        """
    )
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            persona: dev
            exec: {source: hi}
        """
    )
    problem = only(proj.lint(), "adapter 'fancy' is not available")
    assert (problem.file, problem.line, problem.col) == (".agents/pipelines/p.yaml", 4, 14)


# ------------------------------------------------------------------------------ graph


def test_loop_no_edge_can_leave_is_an_error(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
          - id: b
            script: echo
            dependencies: [a]
            edges:
              - target: c
          - id: c
            script: echo
            edges:
              - target: b
        """
    )
    assert at(proj.lint()) == [
        (
            5,
            5,
            "loop b -> c -> b can never be left: add a conditional edge out of it or to _complete",
        )
    ]


def test_step_looping_on_itself_forever(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: poll
            script: echo
            edges:
              - target: poll
        """
    )
    assert at(proj.lint()) == [
        (
            3,
            5,
            "loop poll -> poll can never be left: add a conditional edge out of it or to _complete",
        )
    ]


def test_loop_with_a_conditional_exit_is_fine(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: implement
            script: echo
          - id: test
            script: echo
            dependencies: [implement]
            output:
              context:
                ok: "{{ exit_code == 0 }}"
          - id: check
            type: conditional
            dependencies: [test]
            edges:
              - target: _complete
                condition: context.ok=true
              - target: implement
        """
    )
    assert proj.lint() == []


def test_loop_whose_edges_are_all_conditional_can_end(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            edges:
              - target: a
                condition: outcome=failure
        """
    )
    assert proj.lint() == []


def test_unreachable_step(proj: ProjectDir) -> None:
    # `a` routes by edges, so its dependents are never activated by it
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            edges:
              - target: _complete
          - id: b
            script: echo
            dependencies: [a]
        """
    )
    assert at(proj.lint()) == [(7, 9, "step 'b' can never be reached")]


def test_rework_only_step_is_not_unreachable(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
          - id: fix
            script: echo
            rework_only: true
        """
    )
    assert proj.lint() == []


def test_dependency_cycle(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
          - id: b
            script: echo
            dependencies: [a, c]
          - id: c
            script: echo
            dependencies: [b]
        """
    )
    problems = at(proj.lint())
    assert len(problems) == 1
    line, _, message = problems[0]
    assert message == "dependency cycle: b -> c"
    assert line in (7, 10)  # the `dependencies:` of a step in the cycle


def test_no_step_can_start(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            rework_only: true
        """
    )
    assert at(proj.lint()) == [
        (3, 3, "no step can start: every step has dependencies or is rework_only")
    ]


def test_entry_steps() -> None:
    from swell.manifest.models import Pipeline

    pipeline = Pipeline.model_validate(
        {
            "kind": "WavePipeline",
            "steps": [
                {"id": "first", "script": "x", "edges": [{"target": "looped"}]},
                {"id": "looped", "script": "x"},
                {"id": "parallel", "script": "x"},
                {"id": "after", "script": "x", "dependencies": ["parallel"]},
                {"id": "fixer", "script": "x", "rework_only": True},
            ],
        }
    )
    assert entry_steps(pipeline.steps, default_step_kinds().of) == ["first", "parallel"]


# -------------------------------------------------------------------------- conditions


def test_edge_condition_that_does_not_parse(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            edges:
              - target: _complete
                condition: "exit_code == 0"
        """
    )
    ((line, col, message),) = at(proj.lint())
    assert (line, col) == (7, 20)
    assert message.startswith("cannot read condition 'exit_code == 0'")


def test_condition_on_a_context_key_nobody_sets_is_a_warning(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            edges:
              - target: _complete
                condition: context.done=yes
              - target: a
                condition: outcome=failure
        """
    )
    problems = proj.lint()
    assert at(problems) == []
    assert at(problems, "warning") == [
        (7, 20, "context.done is never set by any step's output.context")
    ]


def test_edges_after_an_unconditional_edge_are_a_warning(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            edges:
              - target: _complete
              - target: _fail
                condition: outcome=failure
        """
    )
    assert at(proj.lint(), "warning") == [
        (7, 9, "edges after an unconditional edge can never be taken")
    ]


# --------------------------------------------------------------------------- templates


def test_template_variables_that_can_never_resolve(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: "echo {{ context.nope }} {{ project.nope }}"
          - id: b
            dependencies: [a]
            script: |
              echo {{ steps.ghost.artifacts.x }}
              echo {{ bogus }}
          - id: c
            dependencies: [b]
            script: "echo {{ steps.a.artifacts.x }} {{ run.nam }} {{ input.x }}"
          - id: d
            dependencies: [c]
            persona: dev
            exec:
              source: "{{ artifacts.plan }} {{ steps.a.stdout_tail }}"
        """
    )
    assert at(proj.lint()) == [
        (4, 13, "template variable 'context.nope' is never set by any step's output.context"),
        (4, 13, "template variable 'project.nope' is not set in wave.yaml `project:`"),
        (7, 13, "template variable 'steps.ghost.artifacts.x' names an unknown step"),
        (7, 13, "unknown template variable 'bogus'"),
        (12, 13, "template variable 'steps.a.artifacts.x': step 'a' declares no such artifact"),
        (12, 13, "unknown template variable 'run.nam' (use run.id or run.name)"),
        (12, 13, "template variable 'input.x' has no fields"),
        (
            17,
            15,
            "template variable 'steps.a.stdout_tail': use steps.ID.artifacts.NAME, .outcome or .exit_code",
        ),
    ]
    # a sub-pipeline's parent may hand `artifacts.plan` down (docs/composition.md)
    assert (
        17,
        15,
        "template variable 'artifacts.plan' names no artifact of this step; it has a value "
        "only in a sub-pipeline whose parent hands it down (docs/composition.md)",
    ) in at(proj.lint(), "warning")


def test_valid_templates_pass(proj: ProjectDir) -> None:
    proj.file(
        "prompts/review.md",
        "Review {{ steps.build.artifacts.report }} ({{ artifacts.build_report }}) for {{ input }}\n",
    )
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: build
            script: |
              echo {{ input }} {{ project.test_command }} {{ run.id }}
              echo {{ pipeline_id }} {{ step_id }} {{ context.verdict }}
              echo {{ .Input }} {{ workspace }} {{ pipeline_name }} {{ project_root }}
            output:
              context:
                verdict: "{{ exit_code == 0 }}"
            output_artifacts:
              - name: report
                path: report.md
          - id: review
            persona: dev
            dependencies: [build]
            exec:
              source_path: prompts/review.md
            memory:
              inject_artifacts:
                - step: build
                  artifact: report
                  as: build_report
          - id: summarise
            dependencies: [review]
            persona: dev
            exec:
              source: |
                {{ steps.build.outcome }} {{ steps.build.exit_code }} {{ steps.review.visit }}
                {{ context.verdict == 'true' && input != '' }}
        """
    )
    assert proj.lint() == []


def test_templates_in_prompt_files_are_checked_at_the_source_path(proj: ProjectDir) -> None:
    proj.file("prompts/p.md", "line one\nhello {{ context.nope }}\n")
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            persona: dev
            exec:
              source_path: prompts/p.md
        """
    )
    assert at(proj.lint()) == [
        (6, 20, "template variable 'context.nope' is never set by any step's output.context")
    ]


def test_template_that_does_not_parse(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo fine
            output:
              context:
                ok: "{{ exit_code == }}"
          - id: b
            dependencies: [a]
            script: "echo {{ input ; rm }}"
        """
    )
    problems = at(proj.lint())
    assert [(line, col) for line, col, _ in problems] == [(7, 13), (10, 13)]
    assert all(message.startswith("in {{ ") for _, _, message in problems)


def test_inject_artifacts_must_name_declared_artifacts(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            output_artifacts:
              - {name: plan, path: plan.md}
          - id: b
            dependencies: [a]
            script: echo
            memory:
              inject_artifacts:
                - {step: a, artifact: plna}
                - {step: zz, artifact: plan}
        """
    )
    assert at(proj.lint()) == [
        (12, 31, "step 'a' declares no output artifact 'plna' (did you mean 'plan'?)"),
        (13, 18, "unknown step 'zz' (known: a, b)"),
    ]


def test_artifact_paths_stay_inside_the_workspace(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            output_artifacts:
              - name: up
                path: ../outside.md
              - name: nopath
        """
    )
    assert at(proj.lint()) == [
        (7, 15, "artifact paths must stay inside the workspace"),
        (8, 9, "artifact 'nopath' needs a path"),
    ]


def test_manifest_without_project_section_rejects_project_vars(proj: ProjectDir) -> None:
    proj.manifest(MANIFEST.replace('project:\n  test_command: "pytest -q"\n', ""))
    proj.pipeline(
        "kind: WavePipeline\nsteps:\n  - id: a\n    script: '{{ project.test_command }}'\n"
    )
    assert at(proj.lint()) == [
        (4, 13, "template variable 'project.test_command' is not set in wave.yaml `project:`")
    ]
