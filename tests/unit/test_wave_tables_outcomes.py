"""Wave's outcome-extraction table (internal/pipeline/outcomes_test.go), mirrored on
swell's reader of `outcomes: [{json_path}]` (engine/visit/deliverables.py): what a path gives,
as the text `swell status` shows, and which paths give nothing. Case ids name the
Wave test."""

from __future__ import annotations

import json
from typing import Any

import pytest

from swell.engine.visit.deliverables import EmptyList, PathError, extract_all, text, walk
from swell.manifest.wave_models import Deliverable

OUT = "pipeline/outcomes_test.go:TestExtractJSONPath/"
VALUES = [
    ("simple_string_field", {"comment_url": "https://example.org/c/1"}, ".comment_url",
     "https://example.org/c/1"),
    ("nested_field", {"result": {"pr_url": "https://example.org/p/9"}}, ".result.pr_url",
     "https://example.org/p/9"),
    ("deeply_nested_field", {"a": {"b": {"c": "deep"}}}, ".a.b.c", "deep"),
    ("integer_value", {"pr_number": 42}, ".pr_number", "42"),
    ("float_value", {"score": 2.5}, ".score", "2.5"),
    ("boolean_value", {"success": True}, ".success", "true"),
    ("path_without_leading_dot", {"url": "https://example.org"}, "url", "https://example.org"),
    ("object_value_returns_JSON", {"meta": {"key": "val"}}, ".meta", '{"key":"val"}'),
    ("array_value_returns_JSON", {"items": [1, 2, 3]}, ".items", "[1,2,3]"),
    ("array_index_first_element", {"issues": [{"url": "u1"}, {"url": "u2"}]},
     ".issues[0].url", "u1"),
    ("array_index_second_element", {"items": [{"name": "a"}, {"name": "b"}]},
     ".items[1].name", "b"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "path", "value"), [c[1:] for c in VALUES], ids=[OUT + c[0] for c in VALUES]
)
def test_value(data: Any, path: str, value: str) -> None:
    assert text(walk(data, path)) == value


ERRORS = [
    ("missing_key", {"other": "value"}, ".comment_url"),
    ("navigate_into_non-object", {"name": "test"}, ".name.sub"),
    ("null_value", {"url": None}, ".url"),
    ("array_index_out_of_bounds", {"items": [{"name": "a"}]}, ".items[5].name"),
    ("array_index_on_non-array", {"items": "not an array"}, ".items[0]"),
    ("invalid_array_index", {"items": [1, 2]}, ".items[abc]"),
]


@pytest.mark.parametrize(
    ("data", "path"), [c[1:] for c in ERRORS], ids=[OUT + c[0] for c in ERRORS]
)
def test_no_value(data: Any, path: str) -> None:
    with pytest.raises(PathError):
        text(walk(data, path))


def test_empty_list_is_no_results() -> None:
    """outcomes_test.go:TestExtractJSONPath_EmptyArrayReturnsemptyArrayError and
    _NonEmptyArrayOOBIsNotemptyArrayError: an empty list is "no results", an index past
    the end of a list that has items a mistake."""
    with pytest.raises(EmptyList):
        walk({"issues": []}, ".issues[0].url")
    with pytest.raises(PathError) as found:
        walk({"items": [{"name": "a"}, {"name": "b"}]}, ".items[5].name")
    assert not isinstance(found.value, EmptyList)


def test_invalid_json_gives_no_value() -> None:
    """OUT + invalid_JSON: the file is not JSON."""
    with pytest.raises(ValueError):
        json.loads("{not json")


ALL = "pipeline/outcomes_test.go:TestExtractJSONPathAll/"


@pytest.mark.parametrize(
    ("data", "path", "values"),
    [
        ({"urls": ["https://a", "https://b"]}, ".urls[*]", ["https://a", "https://b"]),
        ({"issues": [{"url": "u1"}, {"url": "u2"}]}, ".issues[*].url", ["u1", "u2"]),
        ({"result": {"items": [{"name": "al"}, {"name": "be"}]}}, ".result.items[*].name",
         ["al", "be"]),
        ({"items": []}, ".items[*]", []),
        ({"items": ["only"]}, ".items[*]", ["only"]),
        ({"data": {"results": [{"url": "a"}, {"url": "b"}]}}, ".data.results[*].url",
         ["a", "b"]),
        ({"issues": [{"number": 1}, {"number": 2}]}, ".issues[*].number", ["1", "2"]),
    ],
    ids=[ALL + "array_of_strings", ALL + "array_of_objects_with_sub-path",
         ALL + "nested_prefix_path", ALL + "empty_array_returns_empty_slice",
         ALL + "single_element_array", ALL + "deeply_nested_with_sub-path",
         ALL + "extract_integer_values_as_strings"],
)  # fmt: skip
def test_every_element(data: Any, path: str, values: list[str]) -> None:
    assert extract_all(data, path) == values


@pytest.mark.parametrize(
    ("data", "path"),
    [({"name": "x"}, ".name[*]"), ({"items": [1]}, ".missing[*]")],
    ids=[ALL + "non-array_at_wildcard_position", ALL + "missing_field"],
)
def test_every_element_of_nothing(data: Any, path: str) -> None:
    with pytest.raises(PathError):
        extract_all(data, path)


@pytest.mark.parametrize(
    "path",
    ["", "."],
    ids=[OUT + "empty_path", OUT + "dot-only_path"],
)
def test_a_path_naming_no_value_is_refused(path: str) -> None:
    """Wave refuses both; swell at load (`swell validate`), naming the field."""
    with pytest.raises(ValueError, match="needs `json_path`"):
        Deliverable.model_validate({"type": "url", "extract_from": "out.json", "json_path": path})
