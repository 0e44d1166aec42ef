"""Issue 33: a step that writes its declared artifact on every visit keeps every
version readable with its recorded hash, through `swell artifacts --visit N --show`
and the API; a version no longer held is refused, never served as another's bytes."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import httpx
from helpers import client, run_pipeline

from conftest import swell, swell_json

VISITS = 20
LOOP = f"""
kind: WavePipeline
metadata: {{name: versions}}
steps:
  - id: write
    max_visits: {VISITS}
    script: |
      echo "visit $SWELL_VISIT of the note" > note.txt
      if [ "$SWELL_VISIT" -ge {VISITS} ]; then echo '{{"done": "yes"}}'; else echo '{{"done": "no"}}'; fi
    output:
      context:
        done: "{{{{ done }}}}"
    output_artifacts: [{{name: note, path: note.txt}}]
    edges:
      - {{target: _complete, condition: context.done=yes}}
      - {{target: write}}
"""


def _expected(visit: int) -> bytes:
    return f"visit {visit} of the note\n".encode()


async def _fetch_all(project: Path, run_id: str) -> dict[int, httpx.Response]:
    async with client(project) as http:
        return {
            n: await http.get(f"/api/runs/{run_id}/artifacts/write/{n}/note")
            for n in range(1, VISITS + 1)
        }


def test_every_version_of_a_20_visit_loop_is_served_with_its_hash(project: Path) -> None:
    run_id = run_pipeline(project, "versions", LOOP)
    rows = [a for a in swell_json("artifacts", run_id, cwd=project) if a["name"] == "note"]
    recorded = {a["visit"]: a["sha256"] for a in rows}
    assert sorted(recorded) == list(range(1, VISITS + 1))
    for visit, sha in recorded.items():
        assert sha == hashlib.sha256(_expected(visit)).hexdigest()
        shown = swell("artifacts", run_id, "--visit", str(visit), "--show", "note", cwd=project)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.encode() == _expected(visit)
    listed = swell_json("artifacts", run_id, "--visit", "7", cwd=project)
    assert {(a["visit"], a["sha256"]) for a in listed if a["name"] == "note"} == {(7, recorded[7])}
    served = asyncio.run(_fetch_all(project, run_id))
    for visit, response in served.items():
        assert response.status_code == 200
        assert hashlib.sha256(response.content).hexdigest() == recorded[visit]


def test_a_version_no_longer_held_is_refused(project: Path, isolated_state: Path) -> None:
    run_id = run_pipeline(project, "versions", LOOP)
    for kept in (isolated_state / "runs" / run_id / "versions").iterdir():
        kept.write_bytes(b"damaged\n")  # the copies are gone; the file holds visit 20 only
    shown = swell("artifacts", run_id, "--visit", "3", "--show", "note", cwd=project)
    assert shown.returncode == 1 and shown.stdout == ""
    assert "no longer holds this version" in shown.stderr and "Traceback" not in shown.stderr
    last = swell("artifacts", run_id, "--visit", str(VISITS), "--show", "note", cwd=project)
    assert last.returncode == 0 and last.stdout.encode() == _expected(VISITS)
    served = asyncio.run(_fetch_all(project, run_id))
    assert served[3].status_code == 409 and "no longer holds" in served[3].json()["detail"]
    assert served[VISITS].status_code == 200 and served[VISITS].content == _expected(VISITS)
    missing = swell("artifacts", run_id, "--visit", "3", "--show", "nothing", cwd=project)
    assert missing.returncode == 1 and "no artifact 'nothing' at visit 3" in missing.stderr
