"""Validated manifests are kept between commands (manifest/cache.py): a kept file
loads as it did, any change to it is read again, and a cache that is not safe to
read is never read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swell.errors import ManifestError
from swell.manifest import cache
from swell.manifest.loader import load_pipeline, load_project

MANIFEST = "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: kept}\n"
PIPELINE = """kind: WavePipeline
metadata: {name: one}
steps:
  - {id: hello, type: command, script: echo hello, max_visits: 3}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "p"
    (root / ".agents" / "pipelines").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / ".agents" / "pipelines" / "one.yaml").write_text(PIPELINE)
    monkeypatch.setenv("SWELL_CACHE_DIR", str(tmp_path / "cache"))
    return root


def _kept(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "manifests").glob("*.pickle"))


def test_a_kept_file_loads_as_it_did(project: Path, tmp_path: Path) -> None:
    first = load_pipeline(project, "one")
    assert len(_kept(tmp_path)) == 1
    again = load_pipeline(project, "one")
    assert again == first and again is not first  # read back from the cache
    assert again.pipeline.steps[0].max_visits == 3
    assert load_project(project).manifest.metadata.name == "kept"
    assert len(_kept(tmp_path)) == 2


def test_an_edited_file_is_read_again(project: Path) -> None:
    load_pipeline(project, "one")
    path = project / ".agents" / "pipelines" / "one.yaml"
    path.write_text(PIPELINE.replace("max_visits: 3", "max_visits: 5"))
    assert load_pipeline(project, "one").pipeline.steps[0].max_visits == 5
    path.write_text(PIPELINE.replace("max_visits: 3", "max_visits: many"))
    with pytest.raises(ManifestError, match="max_visits"):
        load_pipeline(project, "one")  # an error is never kept, nor hidden by a kept file


def test_a_broken_entry_is_a_miss(project: Path, tmp_path: Path) -> None:
    load_pipeline(project, "one")
    for entry in _kept(tmp_path):
        entry.write_bytes(b"not a pickle")
    assert load_pipeline(project, "one").pipeline.steps[0].max_visits == 3


def test_a_cache_others_may_write_is_never_read(project: Path, tmp_path: Path) -> None:
    load_pipeline(project, "one")
    name = _kept(tmp_path)[0].stem
    assert cache.kept(name, lambda: "built", object) != "built"  # safe: read back
    os.chmod(tmp_path / "cache", 0o777)
    assert cache.kept(name, lambda: "built", object) == "built"  # not even unpickled


def test_off_keeps_nothing(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWELL_CACHE_DIR", "off")
    load_pipeline(project, "one")
    assert not (tmp_path / "cache").exists()
