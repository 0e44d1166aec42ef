"""The dashboard's pages and JSON API over a store filled by real `swell run`s."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

from helpers import HOSTILE, client, run_pipeline

from conftest import run_id_of, swell, swell_json, write_pipeline
from swell.web.text import clean


async def _get(project: Path, url: str) -> tuple[int, str, dict[str, object] | None]:
    async with client(project) as http:
        response = await http.get(url)
    is_json = response.headers.get("content-type", "").startswith("application/json")
    return response.status_code, response.text, response.json() if is_json else None


def get(project: Path, url: str) -> tuple[int, str, dict[str, object] | None]:
    return asyncio.run(_get(project, url))


def test_runs_page_and_api_list_real_runs(project: Path) -> None:
    first = run_pipeline(project, "hostile", HOSTILE)
    second = run_pipeline(project, "hostile", HOSTILE)
    status, html, _ = get(project, "/")
    assert status == 200 and first in html and second in html
    _, _, body = get(project, "/api/runs?pipeline=hostile&status=succeeded&per_page=1")
    assert body is not None and body["total"] == 2 and len(body["runs"]) == 1  # type: ignore[arg-type]
    run = body["runs"][0]  # type: ignore[index]
    assert run["id"] == second and run["visits"] == 2 and run["duration_ms"] is not None
    _, _, none = get(project, "/api/runs?status=failed")
    assert none is not None and none["total"] == 0
    _, _, page2 = get(project, "/api/runs?per_page=1&page=2")
    assert page2 is not None and page2["runs"][0]["id"] == first  # type: ignore[index]


def test_run_page_graph_visits_and_visit_detail(project: Path) -> None:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    status, html, _ = get(project, f"/runs/{run_id}")
    assert status == 200 and "<svg" in html and "1 visit" in html
    _, _, detail = get(project, f"/api/runs/{run_id}")
    assert detail is not None
    assert [s["step_id"] for s in detail["steps"]] == ["emit", "check"]  # type: ignore[index]
    assert detail["visits_total"] == 2 and detail["final"] is True
    _, svg, _ = get(project, f"/api/runs/{run_id}/graph.svg")
    assert svg.startswith("<svg") and 'data-step="emit"' in svg
    _, _, visit = get(project, f"/api/runs/{run_id}/visits/emit/1")
    assert visit is not None and visit["visit"]["status"] == "succeeded"  # type: ignore[index]
    assert "report" in [a["name"] for a in visit["artifacts"]]  # type: ignore[index]
    code, _, _ = get(project, f"/api/runs/{run_id}/visits/emit/9")
    assert code == 404
    code, text, _ = get(project, "/api/runs/nope-nope")
    assert code == 404 and "nope-nope" in text


def test_hostile_output_is_inert_and_bounded(project: Path) -> None:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    status, html, _ = get(project, f"/runs/{run_id}/visits/emit/1")
    assert status == 200
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "\x1b" not in html and "red and" in html
    assert 'href="javascript:' not in html
    assert "x" * 300000 not in html
    _, _, api = get(project, f"/api/runs/{run_id}/visits/emit/1")
    assert api is not None and "\x1b" not in api["output_tail"]  # type: ignore[operator]


BIDI = r"""kind: WavePipeline
metadata: {name: bidi}
steps:
  - id: emit
    type: command
    script: |
      printf 'user \342\200\256nimda\342\200\254 \342\201\246iso\342\201\251 done\n'
"""


def test_bidi_overrides_in_output_are_shown_not_obeyed(project: Path) -> None:
    """U+202E and its kin reorder the text around them ("Trojan Source"): the pages and
    the API show them as `\\u202e`, as the terminal does."""
    write_pipeline(project, "bidi", BIDI)
    run_id = run_id_of(swell("run", "bidi", cwd=project).stdout)
    _, html, _ = get(project, f"/runs/{run_id}/visits/emit/1")
    _, _, api = get(project, f"/api/runs/{run_id}/visits/emit/1")
    assert api is not None
    for shown in (html, str(api["output_tail"])):
        assert not re.search("[\u202a-\u202e\u2066-\u2069]", shown)
        assert "user \\u202enimda\\u202c \\u2066iso\\u2069 done" in shown


def test_artifact_served_from_the_workspace_only(project: Path, isolated_state: Path) -> None:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    _, _, visit = get(project, f"/api/runs/{run_id}/visits/emit/1")
    url = next(a["url"] for a in visit["artifacts"] if a["name"] == "report")  # type: ignore[index]
    status, text, _ = get(project, url)
    assert status == 200 and text == "report <b>bold</b>\n"
    # the recorded file replaced by a link out of the workspace: refused
    workspace = Path(swell_json("status", run_id, cwd=project)["workspace"])
    report = next(workspace.rglob("report.md"))
    secret = project / "secret.txt"
    secret.write_text("secret")
    report.unlink()
    report.symlink_to(secret)
    # the visit's version is served from the copy the run kept (never through the link)
    status, text, _ = get(project, url)
    assert status == 200 and text == "report <b>bold</b>\n"
    shutil.rmtree(isolated_state / "runs" / run_id / "versions")  # no copy left: refused
    status, text, _ = get(project, url)
    assert status == 403 and "secret" not in text.replace("secret.txt", "")


def test_thread_page_uses_swell_thread_paging(project: Path) -> None:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    want = swell_json("thread", run_id, "--budget", "8000", cwd=project)
    _, _, page = get(project, f"/api/runs/{run_id}/thread")
    assert page is not None and page["total"] == want["total"]
    assert [r["id"] for r in page["rounds"]] == [r["id"] for r in want["rounds"]]  # type: ignore[index]
    status, html, _ = get(project, f"/runs/{run_id}/thread")
    assert status == 200 and "#1" in html


CHAIN = """kind: WavePipeline
metadata: {name: chain}
steps:
  - {id: a, type: command, script: echo a}
  - {id: b, type: command, dependencies: [a], script: echo b}
  - {id: c, type: command, dependencies: [b], script: echo c}
  - {id: d, type: command, dependencies: [c], script: echo d}
"""


def test_thread_load_earlier_follows_swell_thread(project: Path) -> None:
    run_id = run_pipeline(project, "chain", CHAIN)
    _, html, _ = get(project, f"/runs/{run_id}/thread?budget=1")
    want = swell_json("thread", run_id, "--budget", "1", cwd=project)
    before = want["omitted"]["before"]
    assert "2 rounds omitted" in html and f"thread?before={before}&budget=1" in html
    _, _, api = get(project, f"/api/runs/{run_id}/thread?budget=1&before={before}")
    earlier = swell_json("thread", run_id, "--budget", "1", "--before", str(before), cwd=project)
    assert api is not None
    assert [r["id"] for r in api["rounds"]] == [r["id"] for r in earlier["rounds"]]  # type: ignore[index]
    assert api["load_before"] == earlier["omitted"]["before"]


def test_pipelines_page_shows_validation(project: Path) -> None:
    run_pipeline(project, "hostile", HOSTILE)
    (project / ".agents" / "pipelines" / "broken.yaml").write_text(
        "kind: WavePipeline\nmetadata: {name: broken}\nsteps:\n  - id: a\n    dependencies: [zzz]\n"
    )
    _, _, body = get(project, "/api/pipelines")
    assert body is not None
    states = {p["name"]: p["ok"] for p in body["pipelines"]}  # type: ignore[union-attr]
    assert states["hostile"] is True and states["broken"] is False
    status, html, _ = get(project, "/pipelines")
    assert status == 200 and "broken" in html and re.search(r"invalid", html)


def test_openapi_describes_the_api(project: Path) -> None:
    _, _, schema = get(project, "/api/openapi.json")
    assert schema is not None
    paths = schema["paths"]
    assert "/api/runs" in paths and "/api/runs/{run_id}/thread" in paths  # type: ignore[operator]
    assert "RunDetail" in schema["components"]["schemas"]  # type: ignore[index]


def test_long_lines_and_texts_are_cut_with_a_note() -> None:
    line = "y" * 10_000_000
    shown = clean(f"start\n{line}\n\x1b[1mend\x1b[0m")
    assert len(shown) < 250_000 and shown.endswith("end")
    assert (
        "[line cut: 9,998,000 more characters]" in shown or "earlier characters not shown" in shown
    )
    cut = clean("a" * 5000)
    assert cut.startswith("a" * 2000) and "[line cut: 3,000 more characters]" in cut


def test_parent_and_child_runs_are_linked(project: Path) -> None:
    result = swell("run", "release", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    parent = run_id_of(result.stdout)
    _, _, body = get(project, "/api/runs")
    assert body is not None
    runs = {r["id"]: r for r in body["runs"]}  # type: ignore[union-attr]
    child = next(r for r in runs.values() if r["parent_run_id"] == parent)
    assert runs[parent]["children"] == 1
    _, html, _ = get(project, "/")
    assert f'child of <a href="/runs/{parent}">' in html
    _, page, _ = get(project, f"/runs/{parent}")
    assert f'<a href="/runs/{child["id"]}">' in page
    _, _, roots = get(project, "/api/runs?roots=true")
    assert roots is not None and [r["id"] for r in roots["runs"]] == [parent]  # type: ignore[union-attr]


def test_visit_page_shows_the_prompt_as_sent(project: Path) -> None:
    result = swell("run", "agent-loop", "--input", "greet <script>x()</script> people", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    _, _, visit = get(project, f"/api/runs/{run_id}/visits/implement/2")
    assert visit is not None
    # the rendered template: the input and the previous visit's test result are in it
    assert "Task: greet <script>x()</script> people" in visit["prompt"]  # type: ignore[operator]
    assert "Last test result: false" in visit["prompt"]  # type: ignore[operator]
    persona = (project / ".agents" / "personas" / "implementer.md").read_text().strip()
    assert visit["system_prompt"].strip() == persona  # type: ignore[union-attr]
    assert all(e["type"] != "prompt.rendered" for e in visit["events"])  # type: ignore[union-attr]
    status, html, _ = get(project, f"/runs/{run_id}/visits/implement/2")
    assert status == 200 and "Prompt as sent" in html
    assert "<script>x()" not in html and "&lt;script&gt;x()" in html
    # a command visit has no prompt
    _, _, command = get(project, f"/api/runs/{run_id}/visits/run-tests/1")
    assert command is not None and command["prompt"] is None
