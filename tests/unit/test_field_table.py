"""Every manifest field has a decision in docs/manifest.md ("Every field and what swell
does with it"): it acts (the row names the module that reads it), it is warned about by
name (its model's NOT_RUN), it is ignored as harmless (IGNORED), or it is refused
(UNSUPPORTED). The fields are found by walking the models from wave.yaml's and a
pipeline's roots, and every contract type's settings; a field without a row, a row
naming a field that is gone, and a row whose status its model contradicts all fail."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swell.contracts.registry import BUILTIN, default_contract_types
from swell.manifest.models import Manifest, Pipeline

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "manifest.md"
HEADING = "## Every field and what swell does with it"
WAVE_YAML, PIPELINES, CONTRACTS = "wave.yaml", "Pipeline files", "Contract settings"
# strongest first: a field below a warned one is warned with it, and so on
RANKS = ("refused", "warned", "ignored", "acts")


@dataclass(frozen=True)
class Field:
    section: str  # the table it belongs in
    path: str  # as written in YAML: `steps[].retry.base_delay`, `adapters.*.binary`
    status: str  # what its model (or an enclosing field's) says: one of RANKS
    own: str  # its own NOT_RUN text; "" when it has none
    nested: bool  # holds fields of its own (a row of the table says so, names no module)


def _own_status(model: type[BaseModel], key: str) -> tuple[str, str]:
    lists = (
        ("refused", getattr(model, "UNSUPPORTED", {})),
        ("warned", getattr(model, "NOT_RUN", {})),
        ("ignored", getattr(model, "IGNORED", ())),
    )
    for status, names in lists:
        if key in names:
            return status, names[key] if isinstance(names, dict) else ""
    return "acts", ""


def _inner_models(annotation: Any, suffix: str = "") -> Iterator[tuple[type[BaseModel], str]]:
    """The models inside a field's annotation, with what their fields' paths add:
    `[]` for a list's items, `.*` for a mapping's values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, suffix
        return
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is list and args:
        yield from _inner_models(args[0], suffix + "[]")
    elif origin is dict and args:
        yield from _inner_models(args[-1], suffix + ".*")
    else:  # a union: each member
        for arg in args:
            yield from _inner_models(arg, suffix)


def _walk(model: type[BaseModel], prefix: str, section: str, above: str) -> Iterator[Field]:
    for name, info in model.model_fields.items():
        key = info.alias or name
        path = f"{prefix}.{key}" if prefix else key
        own, text = _own_status(model, key)
        status = min(own, above, key=RANKS.index)
        inner = list(_inner_models(info.annotation))
        yield Field(section, path, status, text, bool(inner))
        for sub, suffix in inner:
            yield from _walk(sub, path + suffix, section, status)


def model_fields() -> list[Field]:
    """Every field of wave.yaml, of a pipeline, and of each built-in contract type's
    settings (as `TYPE.field`)."""
    found = [*_walk(Manifest, "", WAVE_YAML, "acts"), *_walk(Pipeline, "", PIPELINES, "acts")]
    types = default_contract_types()
    for name in sorted(BUILTIN):
        found += _walk(types.get(name).Settings, name, CONTRACTS, "acts")
    return found


@dataclass(frozen=True)
class Row:
    section: str
    paths: tuple[str, ...]  # a row may name several paths (`contract.X`, `contracts[].X`)
    status: str
    text: str


def doc_rows(text: str) -> list[Row]:
    """The rows of the tables under HEADING, by the `###` section they are in."""
    rows: list[Row] = []
    section, inside = "", False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line.strip() == HEADING
        elif inside and line.startswith("### "):
            section = line[4:].strip()
        elif inside and line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append(Row(section, tuple(re.findall(r"`([^`]+)`", cells[0])), *cells[1:3]))
    return rows


def _problems(fields: list[Field], rows: list[Row]) -> list[str]:
    by_key = {(f.section, f.path): f for f in fields}
    seen: dict[tuple[str, str], Row] = {}
    problems = []
    for row in rows:
        for path in row.paths:
            key = (row.section, path)
            if key in seen:
                problems.append(f"{row.section}: `{path}` has two rows")
            seen[key] = row
            field = by_key.get(key)
            if field is None:
                problems.append(f"{row.section}: `{path}` has a row but is no field")
            elif row.status != field.status:
                problems.append(
                    f"{row.section}: `{path}` is '{row.status}' in the table but "
                    f"'{field.status}' by its model's NOT_RUN/IGNORED/UNSUPPORTED"
                )
            elif field.own and field.own not in row.text:
                problems.append(f"{row.section}: `{path}`'s row should say '{field.own}'")
            elif row.status == "acts" and not field.nested and not _names_module(row.text):
                problems.append(f"{row.section}: `{path}` acts: name the module that reads it")
    for key, field in by_key.items():
        if key not in seen:
            problems.append(f"{field.section}: `{field.path}` ({field.status}) has no row")
    return problems


def _names_module(text: str) -> bool:
    """Whether `text` names a module of swell that exists (`engine/loop/retry.py`)."""
    modules = re.findall(r"`([\w/]+\.py)`", text)
    return any((ROOT / "src" / "swell" / m).is_file() for m in modules)


def test_every_field_has_one_decision_in_the_table() -> None:
    problems = _problems(model_fields(), doc_rows(DOC.read_text(encoding="utf-8")))
    assert not problems, "docs/manifest.md, " + HEADING[3:] + ":\n" + "\n".join(problems)


def test_the_table_check_catches_a_missing_a_stale_and_a_wrong_row() -> None:
    fields = [
        Field(PIPELINES, "steps[].retry.base_delay", "acts", "", False),
        Field(PIPELINES, "hooks", "warned", "lifecycle hooks", True),
        Field(PIPELINES, "kind", "acts", "", False),
    ]
    rows = doc_rows(
        f"{HEADING}\n### {PIPELINES}\n"
        "| `steps[].retry.base_delay` | acts | the first wait (`engine/loop/retry.py`) |\n"
        "| `hooks` | acts | the hooks |\n"
        "| `steps[].retry.gone` | acts | (`engine/loop/retry.py`) |\n"
    )
    assert _problems(fields, rows) == [
        f"{PIPELINES}: `hooks` is 'acts' in the table but 'warned' by its model's "
        "NOT_RUN/IGNORED/UNSUPPORTED",
        f"{PIPELINES}: `steps[].retry.gone` has a row but is no field",
        f"{PIPELINES}: `kind` (acts) has no row",
    ]
