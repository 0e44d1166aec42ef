"""A tool call's result on the visit page: each real agent CLI, against its twin, runs a
command through `swell run`, and the visit's trace shows what the command printed."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from test_pages import get

from agent_clis import cli_path
from cli_setups import CLIS, Cli
from conftest import run_id_of, swell, write_pipeline
from twins.server import Reply, Twin

PIPELINE = """kind: WavePipeline
metadata: {name: tool}
steps:
  - id: work
    persona: worker
    exec: {type: prompt, source: "Run the command."}
"""


def _manifest(cli: Cli, project: Path, twin: Twin, model: str | None) -> str:
    adapter = cli.adapter(project, cli_path(cli.name), twin)
    setup = {"binary": adapter.binary, "options": adapter.options.model_dump(exclude_unset=True)}
    persona = {
        "adapter": cli.name,
        "model": model or "claude-sonnet-4-5",
        "permissions": {"allowed_tools": ["Bash"]},
    }
    manifest = {
        "kind": "WaveManifest",
        "adapters": {cli.name: setup},
        "personas": {"worker": persona},
    }
    return json.dumps(manifest)  # JSON is YAML


@pytest.mark.agent_cli
@pytest.mark.parametrize("cli", CLIS, ids=[cli.name for cli in CLIS])
def test_a_tool_calls_result_shows_on_the_visit_page(tmp_path: Path, cli: Cli) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write_pipeline(project, "tool", PIPELINE)
    replies = [Reply(tool_calls=[cli.shell("echo printed-by-the-tool")]), Reply(text="Done.")]
    with Twin(replies, protocols=(cli.protocol,)) as twin:
        request = cli.request(tmp_path, twin)
        (project / "wave.yaml").write_text(_manifest(cli, project, twin, request.model))
        result = swell("run", "tool", cwd=project, env={**os.environ, **request.env})
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)

    status, html, _ = get(project, f"/runs/{run_id}/visits/work/1")
    assert status == 200
    tool = re.search(r'<details class="tool[^"]*".*?</details>', html, re.S)
    assert tool is not None, html
    assert "<code>Bash</code>" in tool.group(0)
    result_cell = re.search(r'<dd class="result"><pre>(.*?)</pre>', tool.group(0), re.S)
    assert result_cell is not None and "printed-by-the-tool" in result_cell.group(1)
    assert "until the agent's next event" not in tool.group(0)  # measured, not guessed
