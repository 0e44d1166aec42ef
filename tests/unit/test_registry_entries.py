"""A registry's entries load what `importlib.metadata.EntryPoint` would load from the
same value, without importing `importlib.metadata` for swell's built-in ones."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest

from swell.registry import Entry, Registry


@pytest.mark.parametrize(
    "value",
    [
        "swell.engine.steps.command:KIND",
        "os.path:join",
        "json:decoder.JSONDecoder",  # a dotted attribute
        "json : dumps [fast]",  # spaces, and extras (which name nothing to load)
        "json",  # a module alone
    ],
)
def test_an_entry_loads_what_an_entry_point_loads(value: str) -> None:
    assert Entry("n", value, "g").load() is EntryPoint("n", value, "g").load()


def test_an_installed_entry_point_is_kept_as_an_entry() -> None:
    registry: Registry[object] = Registry("thing", "g")
    registry.add_entry_points([EntryPoint("a", "os.path:join", "g"), Entry("b", "json", "g")])
    registry.add_entry_points([EntryPoint("c", "os:sep", "other")])  # another group's
    assert registry.entries == {"a": Entry("a", "os.path:join", "g"), "b": Entry("b", "json", "g")}
    import json
    import os.path

    assert registry.get("a") is os.path.join and registry.get("b") is json


def test_the_builtin_registries_import_no_package_metadata() -> None:
    code = (
        "import sys; from swell.registries import open_registries; r = open_registries(); "
        "r.step_kinds.get('command'); "
        "print('importlib.metadata' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
