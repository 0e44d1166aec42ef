"""The base of every manifest model: strict fields, and what the loader says about
Wave fields swell accepts but does not act on."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict


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
