"""Fan-out through the CLI, on tests/fixtures/fanout: a matrix step and a `concurrency`
step run with the scripted adapter, and `swell validate` naming bad fan-out settings
at their file:line (docs/composition.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_id_of, swell, swell_json

FIXTURE = REPO / "tests" / "fixtures" / "fanout"


@pytest.fixture(name="proj")
def proj_fixture(tmp_path: Path) -> Path:
    dest = tmp_path / "fanout"
    shutil.copytree(FIXTURE, dest)
    return dest


def test_a_matrix_and_a_concurrency_step_run_through_the_cli(proj: Path) -> None:
    result = swell("run", "matrix", cwd=proj)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    found = {a["step_id"] + ":" + a["name"]: a for a in swell_json("artifacts", run_id, cwd=proj)}
    report = json.loads(Path(found["tests:report"]["path"]).read_text())
    assert report == [{"module": m} for m in ("parser", "lexer", "printer")]
    matrix = json.loads(Path(found["tests:matrix-results"]["path"]).read_text())
    assert [w["modified_files"] for w in matrix["worker_results"]] == [
        [f"test_{m}.py"] for m in ("parser", "lexer", "printer")
    ]
    agents = json.loads(Path(found["review:concurrency-results"]["path"]).read_text())
    assert (agents["total_agents"], agents["success_count"]) == (2, 2)


BAD = """\
kind: WavePipeline
steps:
  - id: both
    persona: dev
    concurrency: 2
    strategy: {type: matrix, items_source: x.json}
    exec: {type: prompt, source: hi}
  - id: grid
    persona: dev
    strategy: {type: grid, items_source: x.json}
    exec: {type: prompt, source: hi}
  - id: nosource
    persona: dev
    strategy:
      type: matrix
      dependency_key: after
      input_template: "{{ .name }}"
    exec: {type: prompt, source: "{{ task }}"}
  - id: shell
    concurrency: 3
    script: echo hi
  - id: notask
    persona: dev
    exec: {type: prompt, source: "{{ task }}"}
"""


def test_validate_names_bad_fan_out_settings_at_their_line(proj: Path) -> None:
    (proj / ".agents" / "pipelines" / "bad.yaml").write_text(BAD)
    result = swell("validate", "bad", cwd=proj)
    assert result.returncode != 0
    out = result.stdout + result.stderr
    assert "Traceback" not in out
    expected = [
        (5, "concurrency and a matrix strategy cannot be combined"),
        (10, "strategy type 'grid' is not known"),
        (15, "a matrix strategy needs `items_source`"),
        (16, "`dependency_key` needs `item_id_key`"),
        (17, "`input_template` needs `child_pipeline`"),
        (20, "concurrency fans out the step's prompt; `script` cannot"),
        (24, "'task' is set only in the prompt of a matrix `strategy` step"),
    ]
    for line, message in expected:
        assert any(f"bad.yaml:{line}:" in row and message in row for row in out.splitlines()), (
            line,
            message,
            out,
        )
