"""Loading wave.yaml and pipeline files: every problem at file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest
from manifest_helpers import ProjectDir, at, make_project, write

from swell.errors import ManifestError, PipelineNotFound, ProjectNotFound
from swell.manifest.loader import (
    find_project_root,
    load_pipeline,
    load_project,
    pipeline_paths,
    resolve_pipeline,
)
from swell.manifest.yamlsrc import parse_yaml


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    return make_project(tmp_path, monkeypatch)


PIPE = ".agents/pipelines/p.yaml"


def load_errors(proj: ProjectDir, text: str) -> ManifestError:
    proj.pipeline(text)
    with pytest.raises(ManifestError) as info:
        load_pipeline(proj.root, "p")
    return info.value


# ------------------------------------------------------------------------ YAML syntax


def test_yaml_syntax_error_names_file_line_and_column(proj: ProjectDir) -> None:
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo: hi
        """,
    )
    # the second ':' on line 4 is where the parser gives up
    assert str(err).startswith(f"{PIPE}:4:17: YAML syntax error: mapping values are not allowed")
    assert [(p.file, p.line, p.col) for p in err.problems] == [(PIPE, 4, 17)]


def test_tab_indentation_is_a_syntax_error_at_the_tab(proj: ProjectDir) -> None:
    err = load_errors(proj, "kind: WavePipeline\nsteps:\n\t- id: a\n")
    (problem,) = err.problems
    assert (problem.line, problem.col) == (3, 1)
    assert problem.message.startswith("YAML syntax error: ")


def test_yaml_error_in_wave_yaml_names_wave_yaml(proj: ProjectDir) -> None:
    proj.manifest("kind: WaveManifest\nproject: {test_command: [unclosed\n")
    with pytest.raises(ManifestError) as info:
        load_project(proj.root)
    assert str(info.value).startswith("wave.yaml:")
    assert "YAML syntax error" in str(info.value)


def test_duplicate_keys_are_reported_at_the_second_key(proj: ProjectDir) -> None:
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo one
            script: echo two
          - id: b
            id: c
        """,
    )
    assert at(err.problems) == [
        (5, 5, "duplicate key 'script'"),
        (7, 5, "duplicate key 'id'"),
    ]


def test_empty_file_and_non_mapping_file_are_rejected(proj: ProjectDir) -> None:
    assert at(load_errors(proj, "").problems) == [
        (1, 1, "expected a mapping at the top of the file")
    ]
    assert at(load_errors(proj, "- a\n- b\n").problems) == [
        (1, 1, "expected a mapping at the top of the file")
    ]


def test_file_that_is_not_utf8_is_one_clear_problem(proj: ProjectDir) -> None:
    proj.pipeline("kind: WavePipeline\n")
    (proj.root / PIPE).write_bytes(b"kind: WavePipeline\nsteps: [\xff\xfe]\n")
    with pytest.raises(ManifestError) as info:
        load_pipeline(proj.root, "p")
    # at the first bad byte: line 2, column 9
    assert str(info.value) == f"{PIPE}:2:9: file is not valid UTF-8 (byte 0xff)"


# ------------------------------------------------------------------------ field checks


def test_wrong_type_points_at_the_value(proj: ProjectDir) -> None:
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            max_visits: lots
        """,
    )
    ((line, col, message),) = at(err.problems)
    assert (line, col) == (4, 17)
    assert message.startswith("'max_visits': ")
    assert "integer" in message


def test_a_list_where_a_mapping_belongs(proj: ProjectDir) -> None:
    err = load_errors(proj, "kind: WavePipeline\nsteps:\n  - id: a\n    edges: {target: b}\n")
    ((line, col, message),) = at(err.problems)
    assert (line, col) == (4, 12)
    assert "'edges'" in message and "list" in message


def test_a_value_of_no_allowed_type_is_one_problem(proj: ProjectDir) -> None:
    # output.context values may be text, numbers or booleans; a list is none of them
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            output:
              context:
                k: [1, 2]
        """,
    )
    assert at(err.problems) == [(7, 12, "'k' must be a string, an integer, a number or a boolean")]


def test_literal_field_lists_the_allowed_values(proj: ProjectDir) -> None:
    err = load_errors(proj, "kind: WavePipelin\nsteps: []\n")
    assert at(err.problems) == [
        (1, 7, "'kind' must be one of 'WavePipeline' or 'SwellPipeline', not 'WavePipelin'")
    ]


def test_unknown_field_suggests_the_close_name(proj: ProjectDir) -> None:
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            dependencis: [b]
        """,
    )
    assert at(err.problems) == [
        (5, 5, "unknown field 'dependencis' (did you mean 'dependencies'?)")
    ]


def test_unknown_field_without_a_close_name_has_no_hint(proj: ProjectDir) -> None:
    err = load_errors(proj, "kind: WavePipeline\nsteps:\n  - id: a\n    zzzzzz: 1\n")
    assert at(err.problems) == [(4, 5, "unknown field 'zzzzzz'")]


def test_unknown_field_inside_a_named_persona_suggests_from_persona_fields(
    proj: ProjectDir,
) -> None:
    proj.manifest(
        """
        kind: WaveManifest
        adapters:
          claude:
            binaryy: claude
        personas:
          dev:
            adaptr: claude
        """
    )
    with pytest.raises(ManifestError) as info:
        load_project(proj.root)
    assert at(info.value.problems) == [
        (4, 5, "unknown field 'binaryy' (did you mean 'binary'?)"),
        (7, 5, "unknown field 'adaptr' (did you mean 'adapter'?)"),
    ]
    assert str(info.value).splitlines()[0].startswith("wave.yaml:4:5: ")


def test_missing_step_id_points_at_the_step(proj: ProjectDir) -> None:
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
          - persona: dev
            script: echo
        """,
    )
    assert at(err.problems) == [(5, 5, "missing required field 'id'")]


def test_malformed_step_id_is_explained(proj: ProjectDir) -> None:
    err = load_errors(proj, "kind: WavePipeline\nsteps:\n  - id: 'has space'\n")
    ((line, col, message),) = at(err.problems)
    assert (line, col) == (3, 9)
    assert message.startswith("'id': step id must start with a letter or digit")


def test_wave_field_swell_does_not_run_is_a_named_warning(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            validation:
              - type: schema
        """
    )
    loaded = load_pipeline(proj.root, "p")
    assert at(loaded.warnings, "warning") == [
        (5, 5, "swell does not run `validation` (validation rules) yet; it is ignored")
    ]


def test_not_run_fields_are_found_at_any_depth(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            exec: {type: prompt, source: "do {{ task }}"}
            strategy:
              type: matrix
              items_source: items.json
              stacked: true
        hooks: [{name: h, event: run_start, type: command, command: echo, blocking: true}]
        """
    )
    loaded = load_pipeline(proj.root, "p")
    assert at(loaded.warnings, "warning") == [
        (8, 7, "swell does not run `stacked` (stacked matrix branches) yet; it is ignored"),
        (
            9,
            67,
            "swell does not run `blocking` (blocking hooks; swell's hooks never hold up a "
            "run) yet; it is ignored",
        ),
    ]


def test_wave_fields_are_type_checked(proj: ProjectDir) -> None:
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        hooks: {on_start: x}
        steps:
          - id: a
            script: echo
        """,
    )
    assert at(err.problems) == [(2, 8, "'hooks': Input should be a valid list")]


def test_unimplemented_field_set_to_null_is_accepted(proj: ProjectDir) -> None:
    proj.pipeline("kind: WavePipeline\nsteps:\n  - id: a\n    script: echo\n    strategy: null\n")
    assert load_pipeline(proj.root, "p").pipeline.steps[0].id == "a"


def test_every_problem_in_a_file_is_reported_at_once(proj: ProjectDir) -> None:
    err = load_errors(
        proj,
        """
        kind: WavePipeline
        steps:
          - id: a
            max_visits: lots
          - id: b
            scrpt: echo
          - persona: dev
          - id: c
            validation: [{type: schema}]
        """,
    )
    problems = at(err.problems, None)
    assert problems[0][:2] == (4, 17) and "'max_visits'" in problems[0][2]
    assert problems[1:] == [
        (6, 5, "unknown field 'scrpt' (did you mean 'script'?)"),
        (7, 5, "missing required field 'id'"),
        (9, 5, "swell does not run `validation` (validation rules) yet; it is ignored"),
    ]
    # the message a user reads has one line per problem
    assert len(str(err).splitlines()) == 4
    assert all(line.startswith(f"{PIPE}:") for line in str(err).splitlines())


def test_a_valid_pipeline_loads(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        metadata: {name: custom-name}
        steps:
          - id: build
            script: make
          - id: test
            dependencies: [build]
            script: make test
        """
    )
    loaded = load_pipeline(proj.root, "p")
    assert loaded.name == "custom-name"
    assert [s.id for s in loaded.pipeline.steps] == ["build", "test"]
    assert [s.kind for s in loaded.pipeline.steps] == ["command", "command"]
    # positions survive loading, for lint messages
    assert loaded.source.locate(("steps", 1, "dependencies", 0)) == (7, 20)


def test_positions_are_kept_for_values_and_keys() -> None:
    doc = parse_yaml("a:\n  b: [x, y]\n  'c': 1\n", "f.yaml")
    assert doc.data == {"a": {"b": ["x", "y"], "c": 1}}
    assert doc.source.locate(("a", "b", 1)) == (2, 10)
    assert doc.source.locate(("a", "c"), key=True) == (3, 3)
    assert doc.source.locate(("a", "c")) == (3, 8)
    # an unknown path falls back to its nearest located ancestor
    assert doc.source.locate(("a", "b", 7, "deeper")) == (2, 6)


# ------------------------------------------------------------------------ project root


def test_project_root_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    write(tmp_path / "wave.yaml", "kind: WaveManifest\n")
    deep = tmp_path / "src" / "pkg" / "deeper"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == tmp_path.resolve()


def test_nearest_manifest_wins_and_swell_yaml_counts(tmp_path: Path) -> None:
    write(tmp_path / "wave.yaml", "kind: WaveManifest\n")
    inner = tmp_path / "sub"
    write(inner / "swell.yaml", "kind: SwellManifest\n")
    (inner / "x").mkdir()
    assert find_project_root(inner / "x") == inner.resolve()


def test_project_root_defaults_to_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "wave.yaml", "kind: WaveManifest\n")
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assert find_project_root() == tmp_path.resolve()
    assert load_project().root == tmp_path.resolve()


def test_no_project_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "wave.yaml").mkdir()  # a directory of that name is not a manifest
    with pytest.raises(ProjectNotFound, match=r"no wave\.yaml or swell\.yaml .*swell init"):
        find_project_root(tmp_path)


# --------------------------------------------------------------------- pipeline lookup

SIMPLE = "kind: WavePipeline\nsteps:\n  - id: {id}\n    script: echo\n"


def test_agents_pipelines_win_over_wave_pipelines(proj: ProjectDir) -> None:
    proj.pipeline(SIMPLE.format(id="from-wave"), name="build", where=".wave/pipelines")
    proj.pipeline(SIMPLE.format(id="from-agents"), name="build")
    proj.pipeline(SIMPLE.format(id="only-wave"), name="deploy", where=".wave/pipelines")
    assert resolve_pipeline(proj.root, "build") == proj.root / ".agents/pipelines/build.yaml"
    assert load_pipeline(proj.root, "build").pipeline.steps[0].id == "from-agents"
    assert load_pipeline(proj.root, "deploy").pipeline.steps[0].id == "only-wave"
    assert pipeline_paths(proj.root) == {
        "build": proj.root / ".agents/pipelines/build.yaml",
        "deploy": proj.root / ".wave/pipelines/deploy.yaml",
    }


def test_yml_suffix_is_found_by_name(proj: ProjectDir) -> None:
    write(proj.root / ".agents/pipelines/lint.yml", SIMPLE.format(id="x"))
    assert resolve_pipeline(proj.root, "lint") == proj.root / ".agents/pipelines/lint.yml"


def test_a_path_is_used_as_given_relative_to_the_cwd(
    proj: ProjectDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(proj.root / "elsewhere" / "custom.yaml", SIMPLE.format(id="custom"))
    assert resolve_pipeline(proj.root, "elsewhere/custom.yaml") == path.resolve()
    monkeypatch.chdir(proj.root / "elsewhere")
    loaded = load_pipeline(proj.root, "custom.yaml")
    assert loaded.pipeline.steps[0].id == "custom"
    assert loaded.name == "custom"
    with pytest.raises(PipelineNotFound, match=r"pipeline file nope\.yaml does not exist"):
        resolve_pipeline(proj.root, "nope.yaml")


def test_unknown_pipeline_name_suggests_a_close_one(proj: ProjectDir) -> None:
    proj.pipeline(SIMPLE.format(id="x"), name="hello")
    with pytest.raises(PipelineNotFound) as info:
        resolve_pipeline(proj.root, "helo")
    assert str(info.value) == (
        "no pipeline named 'helo' in .agents/pipelines/ or .wave/pipelines/; did you mean 'hello'?"
    )


def test_unknown_pipeline_name_lists_known_ones_without_a_close_match(proj: ProjectDir) -> None:
    proj.pipeline(SIMPLE.format(id="x"), name="hello")
    proj.pipeline(SIMPLE.format(id="x"), name="release", where=".wave/pipelines")
    with pytest.raises(PipelineNotFound, match=r"; known: hello, release$"):
        resolve_pipeline(proj.root, "zzz")


def test_manifest_problems_in_named_entries_are_reported_together(proj: ProjectDir) -> None:
    proj.manifest(
        """
        kind: WaveManifest
        adapters:
          claude:
            hooks_template: {x: 1}
        personas:
          dev:
            adapter: claude
            temperature: hot
            sandbox: {network: false}
        runtime:
          max_concurrency: 0
          stall_timeout: soon
        """
    )
    with pytest.raises(ManifestError) as info:
        load_project(proj.root)
    problems = at(info.value.problems, None)
    assert [(line, col) for line, col, _ in problems] == [
        (4, 5),
        (4, 21),
        (8, 18),
        (9, 15),
        (11, 20),
        (12, 18),
    ]
    assert problems[0][2].startswith("swell does not run `hooks_template`")
    assert problems[1][2].startswith("'hooks_template': ")
    assert problems[2][2].startswith("'temperature': ")
    assert problems[3][2] == "unknown field 'network'"  # the sandbox runs: no warning
    assert problems[4][2].startswith("'max_concurrency': ")
    assert "must be a duration" in problems[5][2]  # the stall watchdog runs: no warning


def test_union_of_list_and_text_names_both(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: a
            script: echo
            handover:
              contract:
                type: agent_review
                reviewer: dev
                criteria: {a: 1}
        """
    )
    assert at(proj.lint()) == [(9, 19, "'criteria' must be a list of strings or a string")]


# --------------------------------------------------------------------- odd pipeline paths


def test_a_pipeline_path_that_is_a_directory_or_a_device_says_so(proj: ProjectDir) -> None:
    (proj.root / "dir.yaml").mkdir()
    with pytest.raises(PipelineNotFound, match=r"^pipeline file dir\.yaml is a directory$"):
        resolve_pipeline(proj.root, "dir.yaml")
    with pytest.raises(PipelineNotFound, match=r"/dev/null is not a regular file$"):
        resolve_pipeline(proj.root, "/dev/null")


def test_a_name_too_long_for_the_os_is_not_found(proj: ProjectDir) -> None:
    with pytest.raises(PipelineNotFound, match="no pipeline named"):
        resolve_pipeline(proj.root, "x" * 5000)
    with pytest.raises(PipelineNotFound, match="File name too long"):
        resolve_pipeline(proj.root, "x" * 5000 + ".yaml")


def test_a_project_directory_that_is_a_file_or_missing_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ProjectNotFound, match=r"project directory .*file is not a directory"):
        find_project_root(tmp_path / "file")
    with pytest.raises(ProjectNotFound, match=r"project directory .*missing does not exist"):
        find_project_root(tmp_path / "missing")
