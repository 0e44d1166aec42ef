"""Secrets kept out of what a run stores and prints: events and live output.

Two kinds of secret are replaced by `[REDACTED]`: the values of this process's
environment variables whose names say they are secret (`GH_TOKEN`,
`ANTHROPIC_API_KEY`, `DB_PASSWORD`, ...), wherever they appear, and text shaped like
a well-known credential (an OpenAI or Anthropic key, a GitHub or GitLab token, an AWS
access key id, a Slack token, a PEM private key) even when swell never saw its value.
Agents and commands inherit the environment, so an echoed token, a stack trace with
a key in it or a model repeating its prompt would otherwise reach the store, the
dashboard and `-o json`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from swell.events.models import BaseEvent
from swell.streaming import OutputChunk, OutputSink

MASK = "[REDACTED]"
# an environment variable whose name says its value is secret
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)",
    re.IGNORECASE,
)
_SCALARS = frozenset({int, float, bool, type(None)})
MIN_SECRET = 8  # shorter values (`1`, `true`, a port) would mask ordinary text
# each shape with the text every match of it contains (see `Redactor.may_hold`)
SHAPES = (
    (("sk-",), r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),  # OpenAI, Anthropic
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
    ),  # GitHub
    (("github_pat_",), r"github_pat_[A-Za-z0-9_]{30,}"),
    (("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),  # GitLab
    (("AKIA",), r"AKIA[0-9A-Z]{16}"),  # AWS access key id
    (("xox",), r"xox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    (("AIza",), r"AIza[0-9A-Za-z_-]{35}"),  # Google API key
    (
        ("-----BEGIN ",),
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
    ),
)


class Redactor:
    """Replaces secrets in text, and in the text fields of events."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        literal = sorted({v for v in values if len(v) >= MIN_SECRET}, key=len, reverse=True)
        shapes = [shape for _, shape in SHAPES]
        self.pattern = re.compile("|".join([*map(re.escape, literal), *shapes]))
        # a match contains one of these: looking for them is several times quicker
        # than the pattern, and most text holds none
        self.needles = (*literal, *(n for needles, _ in SHAPES for n in needles))

    def may_hold(self, text: str) -> bool:
        """False when `text` surely holds no secret."""
        return any(needle in text for needle in self.needles)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Redactor:
        """Masks the values of `environ`'s secret-named variables and the known shapes."""
        return cls(value for name, value in environ.items() if SECRET_NAME.search(name))

    def text(self, text: str) -> str:
        if self.may_hold(text) and self.pattern.search(text):
            return self.pattern.sub(MASK, text)
        return text

    def event(self, event: BaseEvent) -> BaseEvent:
        """`event`, or a copy of it with its secrets masked (fields nested in lists,
        dicts and models included)."""
        return self.events([event])[0]

    def events(self, events: Sequence[BaseEvent]) -> Sequence[BaseEvent]:
        """`events` themselves when none holds a secret, else copies of those that do."""
        # one look over all the batch's text says whether any field holds a secret
        # (every visit pays this, so it must be cheap; copying is for the rare hit)
        texts: list[str] = []
        for event in events:
            _collect(event.__dict__.values(), texts)
        if not self.may_hold("\x00".join(texts)):
            return events
        out = [self._masked(e) for e in events]
        return events if all(a is b for a, b in zip(out, events, strict=True)) else out

    def _masked(self, event: BaseEvent) -> BaseEvent:
        changed = {
            name: new
            for name, value in event.__dict__.items()
            if (new := self._value(value)) is not value
        }
        return event.model_copy(update=changed) if changed else event

    def _value(self, value: Any) -> Any:
        """`value` itself when it holds no secret, else a masked copy."""
        if isinstance(value, str):
            masked = self.text(value)
            return value if masked == value else masked
        if isinstance(value, list | tuple):
            items = [self._value(v) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return type(value)(items)
        if isinstance(value, dict):
            pairs = {k: self._value(v) for k, v in value.items()}
            return value if all(pairs[k] is value[k] for k in value) else pairs
        if isinstance(value, BaseModel):
            changed = {
                name: new
                for name, field in value.__dict__.items()
                if (new := self._value(field)) is not field
            }
            return value.model_copy(update=changed) if changed else value
        return value


def _collect(values: Iterable[Any], texts: list[str]) -> None:
    """Every string in `values`, nested lists, dicts and models included."""
    for value in values:
        kind = type(value)
        if kind is str:
            texts.append(value)
        elif kind in _SCALARS:
            continue
        elif kind is list or kind is tuple:
            _collect(value, texts)
        elif kind is dict:
            _collect(value.keys(), texts)
            _collect(value.values(), texts)
        elif isinstance(value, BaseModel):
            _collect(value.__dict__.values(), texts)
        elif isinstance(value, str):  # a str subclass (an enum member)
            texts.append(value)


class RedactedOutput:
    """An output sink that masks secrets in each chunk before passing it on. A secret
    split across two writes (a quarter second apart) is not recognised."""

    def __init__(self, sink: OutputSink, redactor: Redactor) -> None:
        self.sink, self.redactor = sink, redactor

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        self.sink.write_output(
            [
                dataclasses.replace(c, text=text)
                if (text := self.redactor.text(c.text)) != c.text
                else c
                for c in chunks
            ]
        )

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        self.sink.drop_output(run_id, step_id, visit, seqs)


__all__ = ["MASK", "RedactedOutput", "Redactor"]
