"""The base of every manifest model: strict fields, and what the loader says about
Wave fields swell accepts but does not act on."""

from __future__ import annotations

import functools
from typing import Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    model_validator,
)

FieldsT = TypeVar("FieldsT", bound=BaseModel)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    # field name -> what it is, for "`strategy` (matrix strategies) is not supported yet"
    UNSUPPORTED: ClassVar[dict[str, str]] = {}
    # Wave fields that change nothing a run does, in Wave either (Wave only shows them,
    # or never reads them): accepted silently so Wave projects load without noise
    IGNORED: ClassVar[tuple[str, ...]] = ()
    # field name -> what it is: Wave fields swell accepts and checks but whose runtime
    # it does not execute yet; setting one is a named lint warning, never silence
    NOT_RUN: ClassVar[dict[str, str]] = {}
    # docs/manifest.md ("Every field and what swell does with it") gives each field's
    # decision, and tests/unit/test_field_table.py keeps it and these lists in step


@functools.cache
def _keys(model: type[BaseModel]) -> frozenset[str]:
    """Every key `model` holds as one of its fields (names and aliases)."""
    fields = model.model_fields
    return frozenset([*fields, *(f.alias for f in fields.values() if f.alias)])


class KindFields(Strict):
    """A model with a `type` (a step) that keeps the fields no model field names, as
    written: they are its kind's own (a plugin kind's `StepKind.Fields`). Lint checks
    them and refuses the ones the kind does not declare, with the loader's message for
    an unknown field; without a `type`, an unknown field is the loader's to refuse."""

    _kind_fields: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_kind_fields(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            return handler(data)
        known = _keys(cls)
        own = {k: v for k, v in data.items() if k not in known}
        model = handler({k: v for k, v in data.items() if k in known} if own else data)
        if own and isinstance(model, KindFields):
            model._kind_fields = own
        return model

    @property
    def kind_fields(self) -> dict[str, Any]:
        """The fields its kind declares itself, as written (`fields` reads them)."""
        return dict(self._kind_fields)

    def fields(self, model: type[FieldsT]) -> FieldsT:
        """The kind's own fields as `model` (a plugin kind's `Fields`)."""
        return model.model_validate(self._kind_fields)
