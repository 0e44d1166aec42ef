"""Wave's manifest format through the CLI: `swell validate` reports every problem of a
file in one pass (file:line, "did you mean"), `--all` checks every pipeline, our Wave
fixture project validates with a named warning per field swell does not run yet, and a
broken wave.yaml does not lock a user out of the runs already in the store."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from conftest import run_id_of, start_swell, swell, swell_json, wait_for

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "wave_project"


def _pipeline(project: Path, name: str, text: str) -> None:
    (project / ".agents" / "pipelines" / f"{name}.yaml").write_text(textwrap.dedent(text))


def test_validate_reports_field_reference_and_template_problems_in_one_pass(
    project: Path,
) -> None:
    _pipeline(
        project,
        "broken",
        """\
        kind: WavePipeline
        steps:
          - id: build
            script: make
            max_visit: 3
          - id: check
            dependencies: [biuld]
            script: "echo {{ steps.buld.outcome }}"
        """,
    )
    result = swell("validate", "broken", cwd=project)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    where = ".agents/pipelines/broken.yaml"
    # the field typo no longer hides the reference and template problems behind it
    assert f"{where}:5:5: unknown field 'max_visit' (did you mean 'max_visits'?)" in lines
    assert f"{where}:7:20: unknown dependency 'biuld' (did you mean 'build'?)" in lines
    assert any(
        line.startswith(f"{where}:8:") and "did you mean 'build'" in line for line in lines
    ), lines
    assert lines[-1] == "3 errors found"


def test_validate_all_checks_every_pipeline(project: Path) -> None:
    _pipeline(project, "zz-bad", "kind: WavePipeline\nsteps:\n  - id: a\n    persona: reviwer\n")
    out = swell_json_failing("validate", "--all", cwd=project)
    assert "zz-bad" in out["pipelines"] and out["failed"] == ["zz-bad"]
    assert len(out["pipelines"]) == len(list((project / ".agents" / "pipelines").glob("*.yaml")))
    problem = next(p for p in out["problems"] if "reviwer" in p["message"])
    assert problem["file"].endswith("zz-bad.yaml") and (problem["line"], problem["col"]) == (4, 14)


def swell_json_failing(*args: str, cwd: Path) -> dict[str, object]:
    import json

    result = swell(*args, "-o", "json", cwd=cwd)
    assert result.returncode == 1, result.stdout
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_wave_fixture_project_validates_and_names_what_does_not_run(tmp_path: Path) -> None:
    project = tmp_path / "wave"
    shutil.copytree(FIXTURE, project)
    out = swell_json("validate", "--all", cwd=project)
    assert out["ok"] is True and sorted(out["pipelines"]) == ["publish", "review"]
    warnings = {p["message"] for p in out["problems"] if p["severity"] == "warning"}
    # run now: composition steps (iterate), outcomes, skills, token scopes, the sub-agent
    # hint, forge/gate/deps variables, the stall watchdog, the cost ledger, pipeline outputs
    for name in ("iterate", "stall_timeout", "cost", "pipeline_outputs", "pipeline"):
        assert not any(f"swell does not run `{name}`" in w for w in warnings), name
    assert not any(w.startswith(("swell does not run `outcomes`", "swell does not render"))
                   and ("outcomes" in w or "forge" in w) for w in warnings)  # fmt: skip


def test_wave_fixture_errors_are_found_when_broken(tmp_path: Path) -> None:
    project = tmp_path / "wave"
    shutil.copytree(FIXTURE, project)
    review = project / ".agents" / "pipelines" / "review.yaml"
    text = review.read_text()
    text = text.replace("artifact: verdict, type: findings_report", "artifact: verdit, type: pr")
    text = text.replace("{pipeline: publish, artifact: note,", "{pipeline: publsh, artifact: note,")
    text = text.replace('"{{ forge.type }}-reviewer"', '"{{ forge.type }}-critic"')
    review.write_text(text)
    out = swell_json_failing("validate", "review", cwd=project)
    errors = [p["message"] for p in out["problems"] if p["severity"] == "error"]
    assert "step 'judge' declares no output artifact 'verdit' (did you mean 'verdict'?)" in errors
    assert any(e.startswith("unknown pipeline I/O type 'pr'") for e in errors)
    assert any("no forge gives a persona" in e for e in errors)
    # an optional cross-pipeline artifact from a missing pipeline is a warning
    assert not any("publsh" in e for e in errors)
    assert any("publsh" in p["message"] for p in out["problems"])


def test_a_broken_wave_yaml_does_not_lock_you_out_of_your_runs(project: Path) -> None:
    def waiting() -> str:
        proc = start_swell("run", "review", "--input", "v2", "--wait", cwd=project)
        run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
        wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"] or None)
        procs.append(proc)
        return run_id

    procs: list[object] = []
    approved, rejected, cancelled = waiting(), waiting(), waiting()
    manifest = project / "wave.yaml"
    manifest.write_text(manifest.read_text() + "\nbogus_field: 1\n")
    assert swell("validate", cwd=project).returncode == 1
    for args in (
        ("status", approved),
        ("list",),
        ("logs", approved),
        ("thread", approved),
        ("approve", approved, "approve", "--choice", "ship"),
        ("reject", rejected, "approve", "--reason", "no"),
        ("cancel", cancelled),
    ):
        result = swell(*args, cwd=project)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    for proc in procs:
        proc.communicate(timeout=60)  # type: ignore[attr-defined]
    statuses = {r: swell_json("status", r, cwd=project)["status"] for r in (approved, cancelled)}
    assert statuses == {approved: "succeeded", cancelled: "cancelled"}
