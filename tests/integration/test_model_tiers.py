"""Model tiers through `swell run`: a step asking for a tier reaches the model server
with the mapped model name, and a retry of it reaches the next tier's model."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import swell, write_pipeline
from twins.server import Reply, Twin

PIPELINE = """
kind: WavePipeline
metadata: {name: tiers}
steps:
  - id: write
    persona: coder
    model: cheapest
    exec: {type: prompt, source: "Say good for {{ input }}."}
    output_artifacts: [{name: answer, path: answer.txt, source: stdout}]
    retry: {max_attempts: 3, no_escalate: NO_ESCALATE}
    handover:
      contract: {type: test_suite, command: "grep -q good answer.txt", on_failure: retry}
"""


def _manifest(url: str) -> str:
    return f"""
kind: WaveManifest
adapters:
  openai:
    options: {{base_url: {url}/v1}}
    tier_models: {{balanced: mid-model}}
personas:
  coder: {{adapter: openai}}
runtime:
  routing: {{complexity_map: {{cheapest: tiny-model, balanced: not-this-one}}}}
"""


@pytest.mark.parametrize(
    ("no_escalate", "models"),
    [("false", ["tiny-model", "mid-model"]), ("true", ["tiny-model", "tiny-model"])],
)
def test_a_tier_reaches_the_server_mapped_and_a_retry_escalates_it(
    tmp_path: Path, no_escalate: str, models: list[str]
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    write_pipeline(project, "tiers", PIPELINE.replace("NO_ESCALATE", no_escalate))
    replies = [Reply(text="bad"), Reply(text="good")]
    with Twin(replies, protocols=("openai_chat",)) as twin:
        (project / "wave.yaml").write_text(_manifest(twin.url))
        result = swell("run", "tiers", "--input", "world", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [c.body["model"] for c in twin.model_calls] == models
