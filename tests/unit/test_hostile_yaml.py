"""Hostile manifests: alias bombs, recursive aliases, deep nesting, huge files, bytes that
are not text, and names that would become paths outside swell's directories. Each is
refused quickly, in bounded memory, with one problem at file:line:col (docs/security.md,
"Hostile input")."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from manifest_helpers import ProjectDir, at, make_project, write

from swell.errors import ManifestError, Problem
from swell.manifest.loader import load_pipeline
from swell.manifest.yamldoc import MAX_DEPTH, MAX_VALUES
from swell.manifest.yamlsrc import MAX_BYTES, load_yaml, parse_yaml
from swell.workspace.paths import PathEscape, inside

# the attacker's file: 446 bytes, 9**9 strings once expanded
BILLION_LAUGHS = "\n".join(
    ["kind: WavePipeline", 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    + [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    + ["steps: [*a8]", ""]
)


@contextmanager
def cheap(seconds: float = 60.0, megabytes: float = 50) -> Iterator[None]:
    """The block must allocate at most `megabytes` at its peak, and end within `seconds`:
    a bound that only catches a hang (an exponential blow-up), never a slow machine."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        yield
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.monotonic() - start < seconds
    assert peak < megabytes * 1e6, f"peak {peak / 1e6:.0f} MB"


def refused(text: str, file: str = "p.yaml") -> Problem:
    """The one problem parsing `text` gives."""
    with cheap(), pytest.raises(ManifestError) as info:
        parse_yaml(text, file)
    (problem,) = info.value.problems
    return problem


def where(problem: Problem) -> tuple[int, int]:
    return problem.line, problem.col


# ------------------------------------------------------------------------------ aliases


def test_billion_laughs_is_refused_at_the_alias_that_expands_too_far() -> None:
    assert len(BILLION_LAUGHS) == 446
    problem = refused(BILLION_LAUGHS)
    # a4 holds 9**5 = 59,049 strings: the second *a4 crosses 100,000
    assert where(problem) == (7, 10)
    assert problem.message.startswith("alias *a4 expands the file past 100,000 values")
    assert "billion laughs" in problem.message


def test_many_aliases_of_a_small_value_count_each_use() -> None:
    uses = ", ".join(["*big"] * (MAX_VALUES // 1000 + 1))
    text = f"big: &big [{', '.join(['1'] * 999)}]\nuses: [{uses}]\n"
    problem = refused(text)
    assert problem.line == 2 and "alias *big expands the file past" in problem.message


def test_an_alias_inside_the_value_it_names_is_refused() -> None:
    # PyYAML builds a list that contains itself; walking it overflowed the stack
    problem = refused("kind: WavePipeline\nsteps: &s [*s]\n")
    assert where(problem) == (2, 12)
    assert problem.message == "alias *s is inside the value it names (a recursive alias)"
    problem = refused("a: &m {b: {c: *m}}\n")
    assert problem.message.startswith("alias *m is inside")


def test_aliases_within_the_limits_are_shared_and_located() -> None:
    doc = parse_yaml("base: &b\n  k: [1, 2]\ncopy: *b\nmore: [*b, *b]\n", "f.yaml")
    assert doc.data == {"base": {"k": [1, 2]}, "copy": {"k": [1, 2]}, "more": [{"k": [1, 2]}] * 2}
    # the alias itself is located where it is used; what is inside it at the anchor
    assert doc.source.locate(("copy",)) == (3, 7)
    assert doc.source.locate(("more", 1)) == (4, 12)
    assert doc.source.locate(("more", 1, "k", 1)) == (2, 10)
    assert doc.source.locate(("more", 1, "k"), key=True) == (2, 3)


def test_merge_keys_work_and_locate_merged_values() -> None:
    doc = parse_yaml(
        "base: &b {script: echo, max_visits: 2}\nstep:\n  <<: *b\n  max_visits: 3\n", "f.yaml"
    )
    # keys written in the mapping win over merged ones, without a duplicate-key error
    assert doc.data["step"] == {"script": "echo", "max_visits": 3}
    assert doc.source.locate(("step", "script")) == (1, 19)
    assert doc.source.locate(("step", "max_visits")) == (4, 15)
    assert where(refused("a:\n  <<: 3\n")) == (2, 7)
    # `<<` that is not a key is text
    assert parse_yaml("a: [<<]\nb: <<\n", "f.yaml").data == {"a": ["<<"], "b": "<<"}


def test_undefined_and_duplicate_anchors_are_located() -> None:
    assert refused("a: *nope\n").message == "YAML syntax error: undefined alias *nope"
    problem = refused("a: &x 1\nb: &x 2\n")
    assert where(problem) == (2, 4) and "duplicate anchor &x" in problem.message


# ------------------------------------------------------------------------------ nesting


@pytest.mark.parametrize("depth", [600, 5_000])
def test_deep_flow_nesting_is_refused_at_the_level_past_the_limit(depth: int) -> None:
    # 600 levels raised RecursionError (a traceback); ~50,000 crashed libyaml's composer
    problem = refused("kind: WavePipeline\nx: " + "[" * depth + "]" * depth + "\n")
    assert where(problem) == (2, 4 + MAX_DEPTH - 1)
    assert problem.message == f"nesting is deeper than {MAX_DEPTH} levels; not read"


def test_deep_block_nesting_is_refused_too() -> None:
    text = "a:\n" + "".join(" " * i + "- \n" for i in range(1, 200))
    assert "nesting is deeper than" in refused(text).message
    text = "a:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 200))
    assert "nesting is deeper than" in refused(text).message


def test_nesting_up_to_the_limit_is_fine() -> None:
    depth = MAX_DEPTH - 1  # the top-level mapping is the first level
    doc = parse_yaml("x: " + "[" * depth + "1" + "]" * depth + "\n", "f.yaml")
    value = doc.data["x"]
    for _ in range(depth - 1):
        value = value[0]
    assert value == [1]


def test_an_alias_cannot_nest_past_the_limit() -> None:
    half = MAX_DEPTH // 2 + 1
    text = "a: &deep " + "[" * half + "]" * half + "\nb: " + "[" * half + "*deep" + "]" * half
    problem = refused(text)
    assert problem.line == 2 and problem.message.startswith("alias *deep nests values deeper")


# ------------------------------------------------------------------------- size and bytes


def test_a_file_over_the_size_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as fh:
        fh.write(b"kind: WavePipeline\n# " + b"x" * MAX_BYTES + b"\n")
    with cheap(), pytest.raises(ManifestError) as info:
        load_yaml(path, "big.yaml")
    (problem,) = info.value.problems
    assert where(problem) == (2, MAX_BYTES - len("kind: WavePipeline\n") + 1)
    assert problem.message == f"file is larger than {MAX_BYTES:,} bytes; not read"


def test_too_many_values_are_refused_even_without_aliases() -> None:
    text = "a: [" + ",".join(["1"] * (MAX_VALUES + 10)) + "]\n"
    with pytest.raises(ManifestError) as info:
        parse_yaml(text, "f.yaml")
    assert f"more than {MAX_VALUES:,} values" in str(info.value)


def test_invalid_utf8_is_located_at_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_bytes(b"kind: WavePipeline\nsteps:\n  - id: \xc3\xa9\xe9\n")  # UTF-8 é, Latin-1 é
    with pytest.raises(ManifestError) as info:
        load_yaml(path, "p.yaml")
    assert str(info.value) == "p.yaml:3:10: file is not valid UTF-8 (byte 0xe9)"


def test_nul_and_control_characters_are_located() -> None:
    problem = refused("kind: WavePipeline\nsteps: [a\x00b]\n")
    assert str(problem) == (
        "p.yaml:2:10: a NUL byte (U+0000) is not allowed in YAML (is this a binary file?)"
    )
    problem = refused("a: 1\nb: 'bell\x07'\n")
    assert where(problem) == (2, 9) and "U+0007" in problem.message


def test_a_binary_file_is_one_problem(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ManifestError) as info:
        load_yaml(path, "p.yaml")
    (problem,) = info.value.problems
    assert problem.line >= 1 and problem.col >= 1


def test_a_directory_or_device_is_not_read(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="is a directory"):
        load_yaml(tmp_path, "dir.yaml")
    with pytest.raises(ManifestError, match="is not a regular file"):
        load_yaml(Path("/dev/zero"), "zero.yaml")


# ------------------------------------------------------------------------- odd scalars


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # these were ValueErrors from PyYAML's constructors: a traceback
        ("a: 2024-13-45\n", "cannot read '2024-13-45' as timestamp: month must be in 1..12"),
        ("a: " + "9" * 5000 + "\n", "as int: Exceeds the limit (4300 digits)"),
        ("a: !!float nope\n", "cannot read 'nope' as float"),
        ("a: !!int 0x\n", "cannot read '0x' as int"),
    ],
)
def test_scalars_that_do_not_convert_are_located(text: str, message: str) -> None:
    problem = refused(text)
    assert where(problem) == (1, 4)
    assert message in problem.message


def test_python_tags_are_refused() -> None:
    problem = refused("a: !!python/object/apply:os.system ['touch PWNED']\n")
    assert where(problem) == (1, 4)
    assert (
        problem.message == "unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:os.system'"
    )
    problem = refused("a: !!python/name:os.system x\n")
    assert where(problem) == (1, 4) and "could not determine a constructor" in problem.message


def test_more_than_one_document_is_refused_at_the_second() -> None:
    problem = refused("a: 1\n---\nb: 2\n")
    assert where(problem) == (2, 1) and "single document" in problem.message


# ------------------------------------------------------------------ names that become paths

SIMPLE = "kind: WavePipeline\nsteps:\n  - id: {id}\n    script: echo\n"


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    return make_project(tmp_path, monkeypatch)


def _load_errors(proj: ProjectDir, text: str) -> ManifestError:
    proj.pipeline(text)
    with pytest.raises(ManifestError) as info:
        load_pipeline(proj.root, "p")
    return info.value


ESCAPES = ["../../x", "/etc/passwd", "..", ".", "a/b", "a\\b", "", "nul\x00", "x" * 201]


def _name_problem(proj: ProjectDir, text: str, value: str) -> tuple[int, int, str]:
    """The single problem of a pipeline where `value` is put in place of VALUE."""
    quoted = '"' + value.replace("\\", "\\\\").replace("\x00", "\\0") + '"'
    ((line, col, message),) = at(_load_errors(proj, text.replace("VALUE", quoted)).problems)
    return line, col, message


@pytest.mark.parametrize("value", ESCAPES)
def test_a_pipeline_name_that_would_leave_the_state_directory_is_refused(
    proj: ProjectDir, value: str
) -> None:
    # metadata.name becomes the run id: .swell/runs/<id>, .swell/workspaces/<id>
    text = "kind: WavePipeline\nmetadata: {name: VALUE}\nsteps: [{id: a, script: echo}]\n"
    line, col, message = _name_problem(proj, text, value)
    assert (line, col) == (2, 18)
    assert message.startswith("'name': must ")


@pytest.mark.parametrize("value", ["../x", "/abs", "..", ".", "a/b", ".hidden", "a\x00", "a\n"])
def test_a_step_id_cannot_be_a_path(proj: ProjectDir, value: str) -> None:
    # a step id is a directory under the run's directory
    text = "kind: WavePipeline\nsteps:\n  - id: VALUE\n    script: echo\n"
    line, col, message = _name_problem(proj, text, value)
    assert (line, col) == (3, 9)
    assert message.startswith("'id': step id must start with a letter or digit")


def test_a_step_id_has_a_length_limit(proj: ProjectDir) -> None:
    text = "kind: WavePipeline\nsteps:\n  - id: VALUE\n    script: echo\n"
    assert "at most 200" in _name_problem(proj, text, "a" * 201)[2]


@pytest.mark.parametrize("value", ESCAPES)
def test_an_output_artifact_name_cannot_be_a_path(proj: ProjectDir, value: str) -> None:
    # written to <workspace>/.swell-artifacts/<name> when it has no path
    text = (
        "kind: WavePipeline\nsteps:\n  - id: a\n    script: echo\n"
        "    output_artifacts:\n      - {name: VALUE, source: stdout}\n"
    )
    line, col, message = _name_problem(proj, text, value)
    assert (line, col) == (6, 16)
    assert message.startswith("'name': must ")


@pytest.mark.parametrize("field", ["as", "artifact"])
@pytest.mark.parametrize("value", ESCAPES)
def test_an_injected_artifact_name_cannot_be_a_path(
    proj: ProjectDir, field: str, value: str
) -> None:
    # copied to <workspace>/.wave/artifacts/<as, else artifact>
    other = "artifact: plan" if field == "as" else "as: plan"
    text = (
        "kind: WavePipeline\nsteps:\n  - id: a\n    script: echo\n"
        "  - id: b\n    script: echo\n    dependencies: [a]\n    memory:\n"
        f"      inject_artifacts:\n        - {{step: a, {other}, {field}: VALUE}}\n"
    )
    line, _, message = _name_problem(proj, text, value)
    assert line == 10
    assert message.startswith(f"'{field}': must ")


@pytest.mark.parametrize(
    "value", ["../../x", "/abs", "a/../b", "..", ".", "-b", "a//b", "a/./b", "a\x00", "a\\b"]
)
def test_a_worktree_branch_cannot_leave_the_worktrees_directory(
    proj: ProjectDir, value: str
) -> None:
    text = (
        "kind: WavePipeline\nsteps:\n  - id: a\n    script: echo\n"
        "    workspace: {type: worktree, branch: VALUE}\n"
    )
    line, col, message = _name_problem(proj, text, value)
    assert (line, col) == (5, 41)
    assert message.startswith("'branch': must ")


def test_usual_names_and_branches_are_fine(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        metadata: {name: "impl-issue v2 (ü)"}
        steps:
          - id: plan.v1
            script: echo
            output_artifacts: [{name: plan.md, source: stdout}]
            workspace: {type: worktree, branch: "swell/{{ run.id }}/feature-1"}
          - id: b
            script: echo
            memory:
              inject_artifacts: [{step: plan.v1, artifact: plan.md, as: the-plan}]
        """
    )
    assert load_pipeline(proj.root, "p").name == "impl-issue v2 (ü)"


def test_a_file_name_that_cannot_name_runs_needs_metadata_name(proj: ProjectDir) -> None:
    write(proj.root / ".agents/pipelines/..yaml", SIMPLE.format(id="a"))
    with pytest.raises(ManifestError) as info:
        load_pipeline(proj.root, ".agents/pipelines/..yaml")
    (problem,) = info.value.problems
    assert (problem.line, problem.col) == (1, 1)
    assert "the pipeline's name '.' (its file name) must not be '.'" in problem.message


def test_a_path_with_a_nul_byte_is_a_path_escape_not_a_value_error(tmp_path: Path) -> None:
    # callers catch PathEscape; the OS's "embedded null byte" ValueError was a traceback
    with pytest.raises(PathEscape, match="NUL byte"):
        inside(tmp_path, "a\x00b")
