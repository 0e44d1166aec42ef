"""Issue 33: the API's visit diff (from the visit's checkpoint) and the visit page's
links to it and to forking from the visit."""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers import client, run_pipeline

LOOP = """
kind: WavePipeline
metadata: {name: cnt}
steps:
  - id: work
    max_visits: 4
    script: |
      echo "line $SWELL_VISIT" >> counter.txt
      if [ "$SWELL_VISIT" -ge 4 ]; then echo '{"done": "yes"}'; else echo '{"done": "no"}'; fi
    output:
      context:
        done: "{{ done }}"
    edges:
      - {target: _complete, condition: context.done=yes}
      - {target: work}
"""


async def _get(project: Path, url: str) -> tuple[int, str]:
    async with client(project) as http:
        response = await http.get(url)
    return response.status_code, response.text


def test_the_api_serves_a_visit_diff_and_the_visit_page_links_it(project: Path) -> None:
    run_id = run_pipeline(project, "cnt", LOOP)
    status, text = asyncio.run(_get(project, f"/api/runs/{run_id}/visits/work/3/diff"))
    assert status == 200 and "+line 3" in text and "+line 2" not in text
    status, text = asyncio.run(_get(project, f"/api/runs/{run_id}/visits/work/3/diff?stat=true"))
    assert status == 200 and "counter.txt" in text and "1 file changed" in text
    status, text = asyncio.run(_get(project, f"/api/runs/{run_id}/visits/work/9/diff"))
    assert status == 404 and "has no work#9" in text
    status, page = asyncio.run(_get(project, f"/runs/{run_id}/visits/work/3"))
    assert status == 200
    assert f"/api/runs/{run_id}/visits/work/3/diff" in page
    assert f"swell fork {run_id} --at work#3" in page
