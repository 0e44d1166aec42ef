"""`swell bench`'s dataset: SWE-bench-format JSONL, a bad line named by file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import swell
from swell.bench.dataset import DatasetError, load_dataset

TASK = {
    "instance_id": "calc-1",
    "repo": "repo",
    "base_commit": "abc123",
    "problem_statement": "add subtracts",
    "FAIL_TO_PASS": ["test_calc.py::test_add"],
    "PASS_TO_PASS": ["test_calc.py::test_mul"],
}


def _write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


def test_a_dataset_reads_swe_bench_lines_with_lists_as_json_text(tmp_path: Path) -> None:
    swe = {**TASK, "instance_id": "calc-2", "FAIL_TO_PASS": '["t.py::a", "t.py::b"]'}
    extra = {**TASK, "instance_id": "calc-3", "setup": "pip install -e .", "version": "1.0"}
    data = load_dataset(_write(tmp_path, TASK, "", swe, extra))
    assert [t.instance_id for t in data.tasks] == ["calc-1", "calc-2", "calc-3"]
    assert data.tasks[1].fail_to_pass == ["t.py::a", "t.py::b"]
    assert data.tasks[2].setup == ["pip install -e ."]
    assert data.repo_location(data.tasks[0]) == str((tmp_path / "repo").resolve())
    url = data.tasks[0].model_copy(update={"repo": "https://example.org/x.git"})
    assert data.repo_location(url) == "https://example.org/x.git"
    assert json.loads(data.tasks[0].line()) == TASK


def test_bad_lines_are_named_by_file_and_line(tmp_path: Path) -> None:
    no_tests = {**TASK, "instance_id": "x", "FAIL_TO_PASS": []}
    path = _write(tmp_path, TASK, "{nope", {"instance_id": "y"}, TASK, no_tests)
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    lines = str(err.value).splitlines()
    assert lines[0].startswith(f"{path}:2: not a JSON object")
    assert lines[1].startswith(f"{path}:3: repo: field required; base_commit: field required")
    assert lines[2] == f"{path}:4: instance_id 'calc-1' is on line 1 too"
    assert lines[3].startswith(f"{path}:5: FAIL_TO_PASS: list should have at least 1 item")


def test_bench_run_says_what_is_wrong_with_a_dataset_without_a_traceback(
    project: Path, tmp_path: Path
) -> None:
    path = _write(tmp_path, {**TASK, "FAIL_TO_PASS": "not json"})
    result = swell("bench", "run", str(path), "--pipeline", "gold", cwd=project)
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {path}:1: FAIL_TO_PASS: must be a list of test ids (or a JSON text of one)\n"
    )


def test_test_results_are_read_from_the_summary_ids_with_spaces_and_dashes_too() -> None:
    from swell.bench.grade import parse_results

    output = "\n".join(
        [
            "PASSED t.py::test_a[x y-z]",
            "FAILED t.py::test_b[a - b] - AssertionError: 1 - 2",
            "ERROR t.py::test_c - fixture 'db' not found",
            "SKIPPED [1] t.py:9: no network",
            "XFAIL t.py::test_d - known",
        ]
    )
    known = {"t.py::test_a[x y-z]", "t.py::test_b[a - b]", "t.py::test_c", "t.py::test_d"}
    assert parse_results(output, known) == {
        "t.py::test_a[x y-z]": "passed",
        "t.py::test_b[a - b]": "failed",
        "t.py::test_c": "error",
        "[1] t.py:9: no network": "skipped",
        "t.py::test_d": "failed",
    }
