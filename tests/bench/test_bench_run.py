"""`swell bench run`: each task a swell run in a fresh checkout, graded by its diff alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from bench_helpers import bench_project, tiny_dataset

from conftest import start_swell, swell, swell_json, wait_for


def _report(project: Path, bench: str = "latest") -> dict[str, Any]:
    found: dict[str, Any] = swell_json("bench", "report", bench, "-o", "json", cwd=project)
    return found


def _verdicts(report: dict[str, Any], label: str) -> dict[str, str]:
    return {t["instance_id"]: t["verdicts"][label] for t in report["tasks"]}


def test_gold_resolves_every_task_and_empty_none(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path)
    project = bench_project(tmp_path, dataset)
    result = swell(
        "bench", "run", str(dataset), "-p", "gold", "-p", "empty", "-j", "2", cwd=project
    )
    assert result.returncode == 0, result.stderr
    assert "gold: resolved 3/3 = 100.0%" in result.stdout
    assert "empty: resolved 0/3 = 0.0%" in result.stdout
    report = _report(project)
    assert _verdicts(report, "gold") == dict.fromkeys(["calc-0", "calc-1", "calc-2"], "resolved")
    assert _verdicts(report, "empty") == dict.fromkeys(["calc-0", "calc-1", "calc-2"], "unresolved")
    (pair,) = report["pairs"]
    assert pair["only_a"] == ["calc-0", "calc-1", "calc-2"] and pair["only_b"] == []
    assert pair["p_value"] == 0.25  # exact McNemar, 3 discordant tasks all one way
    # every task is a swell run of its pipeline, kept in the store as any other
    runs = {r["id"]: r for r in swell_json("list", "-n", "20", cwd=project)}
    for task in report["tasks"]:
        for label in ("gold", "empty"):
            run = runs[task["run_ids"][label]]
            assert run["pipeline"] == label and run["status"] == "succeeded"


def test_a_task_repository_given_as_a_git_url_is_cloned_once(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 2)
    url = f"file://{tmp_path / 'repo'}"
    for i in range(2):  # the base commits on no branch or tag: found all the same
        subprocess.run(["git", "tag", "-d", f"task-{i}"], cwd=tmp_path / "repo", check=True)
    tasks = [{**json.loads(line), "repo": url} for line in dataset.read_text().splitlines()]
    dataset.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    project = bench_project(tmp_path, dataset)
    result = swell("bench", "run", str(dataset), "-p", "gold", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "gold: resolved 2/2" in result.stdout
    assert len(list((tmp_path / "state" / "bench" / "repos").glob("*.git"))) == 1


def test_a_scripted_pipeline_that_fixes_half_scores_half(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 4)
    project = bench_project(tmp_path, dataset)
    result = swell("bench", "run", str(dataset), "-p", "half", "-o", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (summary,) = report["pipelines"]
    assert (summary["resolved"], summary["tasks"], summary["resolved_rate"]) == (2, 4, 0.5)
    assert round(summary["ci_low"], 3) == 0.150 and round(summary["ci_high"], 3) == 0.850
    assert summary["visits_per_task"] == 1.0
    assert _verdicts(report, "half") == {
        "calc-0": "resolved",
        "calc-1": "unresolved",
        "calc-2": "resolved",
        "calc-3": "unresolved",
    }


def test_a_patch_that_breaks_a_pass_to_pass_test_is_not_resolved(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 3)
    project = bench_project(tmp_path, dataset)
    result = swell("bench", "run", str(dataset), "-p", "breaks", "--limit", "1", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "breaks calc-0: not resolved (1 PASS_TO_PASS broken)" in result.stdout
    assert "breaks: resolved 0/1" in result.stdout


def test_a_pipeline_cannot_pass_by_editing_the_tests(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 2)
    project = bench_project(tmp_path, dataset)
    result = swell("bench", "run", str(dataset), "-p", "cheat", "--limit", "1", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "cheat calc-0: not resolved (1 of 1 FAIL_TO_PASS fail)" in result.stdout


def _progress(project: Path, pipeline: str = "slow") -> dict[str, dict[str, Any]] | None:
    """The latest bench's tasks by verdict (running, resolved, ...) once it has a plan."""
    result = swell("bench", "report", "latest", "-o", "json", cwd=project)
    if result.returncode != 0:
        return None
    report = json.loads(result.stdout)
    return {
        t["instance_id"]: {"verdict": t["verdicts"][pipeline], "run": t["run_ids"][pipeline]}
        for t in report["tasks"]
    }


def test_a_killed_bench_resumes_without_running_finished_tasks_again(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 4)
    project = bench_project(tmp_path, dataset)
    (project / "hold").touch()  # the second task waits on it: killed while under way
    proc = start_swell("bench", "run", str(dataset), "-p", "slow", cwd=project)

    def graded() -> dict[str, dict[str, Any]] | None:
        tasks = _progress(project)
        ok = tasks and any(t["verdict"] == "resolved" for t in tasks.values())
        return tasks if ok and any(t["verdict"] == "running" for t in tasks.values()) else None

    wait_for(graded, timeout=120, interval=0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    before = _progress(project)
    assert before is not None
    done = {iid: t["run"] for iid, t in before.items() if t["verdict"] == "resolved"}
    under_way = {iid: t["run"] for iid, t in before.items() if t["verdict"] == "running"}
    assert (list(done), list(under_way)) == (["calc-0"], ["calc-1"])
    (project / "hold").unlink()
    bench = _report(project)["bench_id"]
    again = swell("bench", "run", str(dataset), "-p", "slow", "--bench", bench[:14], cwd=project)
    assert again.returncode == 0, again.stderr
    resumed = _report(project, bench)
    assert _verdicts(resumed, "slow") == dict.fromkeys(
        ["calc-0", "calc-1", "calc-2", "calc-3"], "resolved"
    )
    for iid, run_id in {**done, **under_way}.items():
        # graded before the kill: not run again; under way: goes on in the same run
        assert resumed_run(resumed, iid) == run_id
    # a fresh bench gives the same report, but for ids and times
    fresh = swell("bench", "run", str(dataset), "-p", "slow", "-o", "json", cwd=project)
    assert _comparable(json.loads(fresh.stdout)) == _comparable(resumed)


def test_ctrl_c_stops_the_bench_and_says_how_to_continue(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 2)
    project = bench_project(tmp_path, dataset)
    proc = start_swell("bench", "run", str(dataset), "-p", "hang", cwd=project)

    def running() -> bool:
        tasks = _progress(project, "hang")
        return bool(tasks) and tasks["calc-0"]["verdict"] == "running"

    wait_for(running, timeout=60, interval=0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    bench = out.split()[1].rstrip(":")
    assert f"continue with: swell bench run {dataset} --pipeline hang --bench {bench}" in err
    tasks = _progress(project, "hang")  # the interrupted task's run is kept to continue
    assert tasks is not None and tasks["calc-0"]["verdict"] == "running"
    assert tasks["calc-1"]["verdict"] == "missing"
    (summary,) = _report(project)["pipelines"]
    assert summary["tasks"] == 0  # rates are over graded tasks only
    other = swell("bench", "run", str(dataset), "-p", "gold", "--bench", bench, cwd=project)
    assert other.returncode == 2
    assert f"bench {bench} ran hang on {dataset}" in other.stderr


def resumed_run(report: dict[str, Any], instance_id: str) -> str:
    (task,) = [t for t in report["tasks"] if t["instance_id"] == instance_id]
    run_id: str = task["run_ids"]["slow"]
    return run_id


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    (s,) = report["pipelines"]
    keep = (
        "tasks",
        "resolved",
        "resolved_rate",
        "ci_low",
        "ci_high",
        "cost_usd",
        "tokens",
        "visits",
    )
    return {
        "summary": {k: s[k] for k in keep},
        "verdicts": _verdicts(report, "slow"),
        "pairs": report["pairs"],
    }


def test_grading_runs_in_the_sandbox_the_project_configures(tmp_path: Path) -> None:
    dataset = tiny_dataset(tmp_path, 1)
    store = tmp_path / "state" / "state.db"  # where the bench's store is (conftest)
    task = json.loads(dataset.read_text())
    check = (
        f"\n\ndef test_no_store():\n    import os\n    assert not os.path.exists({str(store)!r})\n"
    )
    repo = tmp_path / "repo"
    (repo / "test_sandbox.py").write_text(check)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "check"],
        cwd=repo,
        check=True,
    )
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    task.update(base_commit=head.stdout.strip(), FAIL_TO_PASS=["test_sandbox.py::test_no_store"])
    dataset.write_text(json.dumps(task) + "\n")
    project = bench_project(tmp_path, dataset)
    with (project / "wave.yaml").open("a") as manifest:
        manifest.write("runtime:\n  sandbox: {enabled: true}\n")
    boxed = swell("bench", "run", str(dataset), "-p", "empty", cwd=project)
    assert boxed.returncode == 0, boxed.stderr
    assert "empty: resolved 1/1" in boxed.stdout  # the store is hidden from the tests
    plain = swell("bench", "run", str(dataset), "-p", "empty", "--no-sandbox", cwd=project)
    assert "empty: resolved 0/1" in plain.stdout
