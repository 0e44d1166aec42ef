"""Search and filters on the runs page and the runs API: run id prefix, input text,
pipeline, status, dates, waiting at a gate; the URL keeps them."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import run_pipeline
from test_pages import get

from conftest import run_id_of, start_swell, swell, swell_json, wait_for

HELLO = """kind: WavePipeline
metadata: {name: greet}
steps:
  - {id: say, type: command, script: echo said}
"""


def ids(project: Path, url: str) -> list[str]:
    _, _, body = get(project, url)
    assert body is not None, url
    return [r["id"] for r in body["runs"]]  # type: ignore[union-attr]


def shown(project: Path, url: str) -> list[str]:
    _, html, _ = get(project, url)
    return re.findall(r'<td class="id"><a href="/runs/([^"]+)">', html)


def test_runs_filter_by_text_id_prefix_pipeline_status_and_waiting(project: Path) -> None:
    apples = run_pipeline(project, "greet", HELLO, "--input", "Green APPLES 100%")
    pears = run_pipeline(project, "greet", HELLO, "--input", "ripe pears")
    proc = start_swell("run", "review", "--input", "ship pears", "--wait", cwd=project)
    try:
        waiting = run_id_of(proc.stdout.readline())
        wait_for(lambda: swell_json("status", waiting, cwd=project)["waiting_gates"])
        for view in (ids, shown):
            assert view(project, "/api/runs?q=apples" if view is ids else "/?q=apples") == [apples]
            assert set(view(project, "/api/runs?q=PEARS" if view is ids else "/?q=PEARS")) == {
                pears,
                waiting,
            }
            prefix = pears[: len("greet-")]
            got = view(project, f"/api/runs?q={prefix}" if view is ids else f"/?q={prefix}")
            assert set(got) == {apples, pears}
            assert view(project, "/api/runs?q=100%25" if view is ids else "/?q=100%25") == [apples]
            assert (
                view(project, "/api/runs?q=1_0" if view is ids else "/?q=1_0") == []
            )  # _ is no wildcard
            url = "/api/runs?waiting=1" if view is ids else "/?waiting=1"
            assert view(project, url) == [waiting]
            url = "/api/runs?q=pears&pipeline=greet&status=succeeded"
            assert view(project, url if view is ids else url.replace("/api/runs", "/")) == [pears]
        # the form keeps what was asked, and the pages' links keep the filter
        _, html, _ = get(project, "/?q=pears&waiting=1&per_page=1")
        assert 'name="q" value="pears"' in html and 'name="waiting" value="1" checked' in html
        assert (
            'data-fragment="/?q=pears&amp;waiting=1&amp;per_page=1&amp;page=1&amp;fragment=1"'
            in html
        )
        _, html, _ = get(project, "/?q=pears&per_page=1")
        assert 'href="/?q=pears&amp;per_page=1&amp;page=2"' in html
        assert swell("approve", waiting, "--choice", "ship", cwd=project).returncode == 0
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert ids(project, "/api/runs?waiting=1") == []
    _, _, body = get(project, "/api/runs?q=pears")
    assert body is not None and body["filters"]["q"] == "pears"  # type: ignore[index]
