"""The shipped dataset (benchmarks/bench-data/): >= 30 tasks from mutants of inflection
0.5.1, its repository rebuilt offline with the same commits; gold resolves every task
and empty none. The embedded local model's run of it (about 40 minutes here, too long
for CI) is `make bench-local` and benchmarks/bench_harness.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, swell
from swell.bench.make import rebuild

DATA = REPO / "benchmarks" / "bench-data"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset, pointing at its repository rebuilt in a temporary directory."""
    where = tmp_path_factory.mktemp("shipped")
    repo = where / "build" / "inflection"
    rebuild(DATA / "inflection", DATA / "inflection.jsonl", repo)
    lines = (DATA / "inflection.jsonl").read_text().splitlines()
    dataset = where / "inflection.jsonl"
    dataset.write_text(
        "".join(json.dumps({**json.loads(x), "repo": str(repo)}) + "\n" for x in lines)
    )
    return dataset


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(DATA / "project", project)
    return project


def _run(project: Path, dataset: Path, *args: str) -> dict[str, Any]:
    result = swell("bench", "run", str(dataset), "-o", "json", *args, cwd=project, timeout=3600)
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_the_shipped_dataset_has_30_tasks_or_more_of_every_operator(shipped: Path) -> None:
    tasks = [json.loads(line) for line in shipped.read_text().splitlines()]
    assert len(tasks) >= 30
    assert (
        (DATA / "inflection" / "LICENSE")
        .read_text()
        .startswith("Copyright (C) 2012-2020 Janne Vanhala")
    )
    for task in tasks:
        assert task["FAIL_TO_PASS"] and len(task["FAIL_TO_PASS"]) + len(task["PASS_TO_PASS"]) == 455
        assert task["patch"].startswith("diff --git a/inflection/__init__.py")


def test_gold_and_empty_on_three_shipped_tasks(shipped: Path, tmp_path: Path) -> None:
    report = _run(
        _project(tmp_path), shipped, "-p", "gold", "-p", "empty", "--limit", "3", "-j", "2"
    )
    rates = {s["label"]: (s["resolved"], s["tasks"]) for s in report["pipelines"]}
    assert rates == {"gold": (3, 3), "empty": (0, 3)}


@pytest.mark.slow
def test_gold_scores_100_and_empty_0_on_the_whole_shipped_dataset(
    shipped: Path, tmp_path: Path
) -> None:
    report = _run(_project(tmp_path), shipped, "-p", "gold", "-p", "empty", "-j", "2")
    n = len(shipped.read_text().splitlines())
    rates = {s["label"]: (s["resolved"], s["tasks"]) for s in report["pipelines"]}
    assert rates == {"gold": (n, n), "empty": (0, n)}
