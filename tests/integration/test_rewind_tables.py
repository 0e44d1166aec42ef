"""Issue 33: after `swell rewind`, the tables the store derives from events (visits,
artifacts, thread rounds) show only the run as it now is: the abandoned visits stay in
the log (`swell logs`), never as current rows in `swell status`, `swell artifacts` or
`swell thread`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import events, run_id_of, swell, swell_json, write_pipeline

LOOP = """
kind: WavePipeline
metadata: {{name: cnt}}
steps:
  - id: work
    max_visits: 6
    thread: t
    script: |
      echo "visit $SWELL_VISIT" > report.md
      if [ "$SWELL_VISIT" -ge $(cat {limit}) ]; then echo '{{"done": "yes"}}'; else echo '{{"done": "no"}}'; fi
    output:
      context:
        done: "{{{{ done }}}}"
    output_artifacts: [{{name: report, path: report.md}}]
    edges:
      - {{target: _complete, condition: context.done=yes}}
      - {{target: work}}
"""


def test_a_rewound_run_shows_no_abandoned_visits_artifacts_or_rounds(project: Path) -> None:
    limit = project / "limit"
    limit.write_text("4\n")  # outside the workspace: the rewound run stops sooner
    write_pipeline(project, "cnt", LOOP.format(limit=limit))
    run_id = run_id_of(swell("run", "cnt", cwd=project).stdout)
    assert [s["visit"] for s in swell_json("status", run_id, cwd=project)["steps"]] == [1, 2, 3, 4]
    limit.write_text("2\n")
    rewound = swell("rewind", run_id, "--to", "work#1", cwd=project)
    assert rewound.returncode == 0, rewound.stderr

    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "succeeded" and status["visits"] == 2
    assert sorted(s["visit"] for s in status["steps"]) == [1, 2]
    listed = swell_json("artifacts", run_id, cwd=project)
    rows = listed["artifacts"] if isinstance(listed, dict) else listed
    assert sorted({a["visit"] for a in rows}) == [1, 2], rows
    thread = swell("thread", run_id, cwd=project)
    assert thread.returncode == 0, thread.stderr
    assert re.findall(r"^\[#(\d+) work\]", thread.stdout, re.M) == ["1", "2"], thread.stdout
    assert '"done": "yes"' in thread.stdout.split("[#2 work]")[1]
    # the abandoned visits stay in the log, in order
    started = [e["visit"] for e in events(project, run_id) if e["type"] == "step.started"]
    assert started == [1, 2, 3, 4, 2]
    assert json.loads(swell("status", run_id, "-o", "json", cwd=project).stdout)["rewinds"]


CONTEXT_LOOP = """
kind: WavePipeline
metadata: {{name: ctx}}
steps:
  - id: work
    max_visits: 6
    script: |
      if [ "$(cat {limit})" = stop ]; then echo 'stopped before any output' >&2; exit 1; fi
      if [ "$SWELL_VISIT" -ge 3 ]; then echo '{{"done": "yes"}}'; else echo '{{"done": "no"}}'; fi
    output:
      context:
        done: "{{{{ done }}}}"
    edges:
      - {{target: _complete, condition: context.done=yes}}
      - {{target: work}}
"""


def test_a_rewound_run_shows_the_context_as_it_was_at_the_point(project: Path) -> None:
    limit = project / "limit"
    limit.write_text("go\n")
    write_pipeline(project, "ctx", CONTEXT_LOOP.format(limit=limit))
    run_id = run_id_of(swell("run", "ctx", cwd=project).stdout)
    assert swell_json("status", run_id, cwd=project)["context"]["done"] == "yes"
    limit.write_text("stop\n")  # the visit after the point fails before it sets anything
    swell("rewind", run_id, "--to", "work#1", cwd=project)
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "failed"
    # visit 3, abandoned, set done=yes; at work#1 it was "no"
    assert status["context"]["done"] == "no", status["context"]
    rewinds = [e for e in events(project, run_id) if e["type"] == "run.rewound"]
    assert rewinds[0]["context"] == {"done": "no"}
