"""Write src/swell/events/shapes.py: every event kind's fields and defaults, read from
the models in events/models.py, so a reader can rebuild a stored event without pydantic.

    python scripts/event_shapes.py          # rewrite the module (and ruff-format it)
    python scripts/event_shapes.py --check  # exit 1 if it no longer matches the models

tests/unit/test_event_views.py runs the check.
"""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from swell.events.models import ENVELOPE, EVENT_TYPES

TARGET = Path(__file__).resolve().parent.parent / "src" / "swell" / "events" / "shapes.py"

HEADER = '''"""Every event kind's fields, in order, with their defaults: what a stored event
(`event_data`: its fields minus the envelope and minus defaults) lacks. Lets a reader
(`swell logs`) rebuild an event without importing pydantic (events/views.py).

Generated from events/models.py by scripts/event_shapes.py; do not edit by hand.
"""

from __future__ import annotations

REQUIRED = ...  # a field without a default: always stored

'''


def _default(field: Any) -> Any:
    if field.default is not PydanticUndefined:
        return field.default
    if field.default_factory is not None:
        return field.default_factory()
    return ...


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    found = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found.append(annotation)
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def compute() -> tuple[dict[str, Any], dict[tuple[str, str], str], dict[str, Any]]:
    """(fields by kind, nested model by (kind or model, field), fields by nested model)."""
    nested: dict[tuple[str, str], str] = {}
    models: dict[str, Any] = {}

    def shape(owner: str, cls: type[BaseModel], skip: frozenset[str] = frozenset()) -> Any:
        pairs = []
        for name, f in cls.model_fields.items():
            if name in skip:
                continue
            pairs.append((name, _default(f)))
            inner = _models_in(f.annotation)
            if inner:  # a model, a list of them, or one or None
                model = inner[0]
                nested[(owner, name)] = model.__name__
                models[model.__name__] = shape(model.__name__, model)
        return tuple(pairs)

    fields = {kind: shape(kind, EVENT_TYPES[kind], ENVELOPE) for kind in sorted(EVENT_TYPES)}
    return fields, nested, dict(sorted(models.items()))


def _literal(value: Any) -> str:
    return "REQUIRED" if value is ... else repr(value)


def _shapes(name: str, shapes: dict[str, Any]) -> list[str]:
    out = [f"{name}: dict[str, tuple[tuple[str, object], ...]] = {{\n"]
    for owner, pairs in shapes.items():
        out.append(f"    {owner!r}: (\n")
        out += [f"        ({field!r}, {_literal(value)}),\n" for field, value in pairs]
        out.append("    ),\n")
    return [*out, "}\n"]


def render() -> str:
    fields, nested, models = compute()
    out = [HEADER, "# event type -> ((field, default), ...), envelope left out\n"]
    out += _shapes("FIELDS", fields)
    out.append("\n# (event type or model, field) -> the model its value (or items) has\n")
    out.append("NESTED: dict[tuple[str, str], str] = {\n")
    out += [f"    {key!r}: {value!r},\n" for key, value in sorted(nested.items())]
    out.append("}\n\n# model -> ((field, default), ...)\n")
    out += _shapes("MODELS", models)
    return "".join(out)


def current() -> bool:
    """Whether the module holds what the models say (compared as data, not text)."""
    from swell.events import shapes

    return compute() == (shapes.FIELDS, shapes.NESTED, shapes.MODELS)


def main() -> int:
    if "--check" in sys.argv[1:]:
        if not current():
            print(f"{TARGET} is out of date: run python scripts/event_shapes.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(render())
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(TARGET)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
