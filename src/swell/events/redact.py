"""Secrets kept out of what a run stores and prints: events, live output and inputs.

Two kinds of secret are replaced by `[REDACTED]`: the values of this process's
environment variables whose names say they are secret (`GH_TOKEN`,
`ANTHROPIC_API_KEY`, `DB_PASSWORD`, ...), wherever they appear, and text shaped like
a well-known credential (an OpenAI or Anthropic key, a GitHub or GitLab token, an AWS
access key id, a Slack token, a PEM private key) even when swell never saw its value.
Agents and commands inherit the environment, so an echoed token, a stack trace with
a key in it or a model repeating its prompt would otherwise reach the store, the
dashboard and `-o json`.

Only free text is masked: an event's `FreeText` fields (events/models.py), output
and a run's input. Identifiers, keys, paths and the envelope are never touched.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from swell.events.models import BaseEvent, text_fields

MASK = "[REDACTED]"
# an environment variable whose name says its value is secret
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)",
    re.IGNORECASE,
)
MIN_SECRET = 8  # shorter values (`1`, `true`, a port) would mask ordinary text
# the characters of a key (and of an identifier): a shape never starts right after one,
# so `plan-task-20261127-172006-e25e17d5` (a run id) holds no `sk-` key
KEY_CHARS = string.ascii_letters + string.digits + "_-"
_START = r"(?<![A-Za-z0-9_-])"
_END = r"(?![A-Za-z0-9_-])"  # after a shape of a fixed length
PEM_START = "-----BEGIN "
# each shape with the text every match of it contains (see `Redactor.may_hold`)
KEY_SHAPES = (
    (("sk-",), r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),  # OpenAI, Anthropic
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
    ),  # GitHub
    (("github_pat_",), r"github_pat_[A-Za-z0-9_]{30,}"),
    (("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),  # GitLab
    (("AKIA",), r"AKIA[0-9A-Z]{16}" + _END),  # AWS access key id
    (("xox",), r"xox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    (("AIza",), r"AIza[0-9A-Za-z_-]{35}" + _END),  # Google API key
)
PEM = r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
KEY_NEEDLES = tuple(n for needles, _ in KEY_SHAPES for n in needles)
_KEY_PREFIXES = frozenset(n[:k] for n in KEY_NEEDLES for k in range(1, len(n)))
# Output is masked as a stream (engine/visit/output_log.py): its end is held back while a secret
# may be starting there. These bound how much: a key-shaped word at the end (real keys
# are at most about 200 characters), and anything (an unfinished PEM key, 3 to 7 kB).
# A longer secret printed across two writes can be stored in part.
LONGEST_KEY = 256
LONGEST_HOLD = 16 * 1024

_Model = TypeVar("_Model", bound=BaseModel)


class Redactor:
    """Replaces secrets in text, in the free text of events, and in output streams."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        literal = sorted({v for v in values if len(v) >= MIN_SECRET}, key=len, reverse=True)
        shapes = [_START + shape for _, shape in KEY_SHAPES]
        self.pattern = re.compile("|".join([*map(re.escape, literal), *shapes, PEM]))
        # a match contains one of these: looking for them is several times quicker
        # than the pattern, and most text holds none
        self.needles = (*literal, *KEY_NEEDLES, PEM_START)
        # the starts of secrets output may end with, by their last character:
        # (secret, how many of its characters), longest first
        starts: dict[str, list[tuple[str, int]]] = {}
        for value in (*literal, PEM_START):
            for size in range(1, len(value)):
                starts.setdefault(value[size - 1], []).append((value, size))
        self.starts = {c: sorted(s, key=lambda p: -p[1]) for c, s in starts.items()}

    def may_hold(self, text: str) -> bool:
        """False when `text` surely holds no secret."""
        return any(needle in text for needle in self.needles)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Redactor:
        """Masks the values of `environ`'s secret-named variables and the known shapes."""
        return cls(value for name, value in environ.items() if SECRET_NAME.search(name))

    def text(self, text: str) -> str:
        if text and self.may_hold(text) and self.pattern.search(text):
            return self.pattern.sub(MASK, text)
        return text

    # ---------------------------------------------------------------- streams

    def split(self, text: str, start: int = 0, *, final: bool = False) -> tuple[str, int]:
        """`(shown, cut)`: `text[start:cut]` masked, where `cut` leaves out the end of
        `text` while a secret may be starting there (nothing when `final`: the text
        ends). `text[:start]` is what came before, looked at but not passed on."""
        cut = len(text) if final else max(len(text) - self._may_start(text), start)
        if not self.may_hold(text):
            return text[start:cut], cut
        shown: list[str] = []
        last = start
        for match in self.pattern.finditer(text, start):
            begin, end = match.span()
            if begin >= cut:
                break
            if end > cut or (end == len(text) and not final):  # it may go on
                if len(text) - begin <= LONGEST_HOLD:
                    cut = begin
                    break
                cut = max(cut, end)  # too long to wait for: masked as far as it goes
            shown += (text[last:begin], MASK)
            last = end
        shown.append(text[last:cut])
        return "".join(shown), cut

    def _may_start(self, text: str) -> int:
        """How many of the last characters of `text` may begin a secret not yet printed
        whole: the start of a secret value or of a PEM key's first line, or a word
        that is, or may become, key-shaped."""
        if not text:
            return 0
        held = 0
        for value, size in self.starts.get(text[-1], ()):
            if size <= len(text) and text.endswith(value[:size]):
                held = size
                break
        begin = text.rfind(PEM_START, max(len(text) - LONGEST_KEY, 0))
        if begin >= 0 and "\n" not in text[begin:]:  # a PEM header not yet whole
            held = max(held, len(text) - begin)
        if text[-1] in KEY_CHARS:
            window = text[-LONGEST_KEY:]
            word = window[len(window.rstrip(KEY_CHARS)) :]
            if word in _KEY_PREFIXES or word.startswith(KEY_NEEDLES):
                held = max(held, len(word))
        return held

    # ----------------------------------------------------------------- events

    def event(self, event: BaseEvent) -> BaseEvent:
        """`event`, or a copy of it with the secrets in its free text masked."""
        return self.events([event])[0]

    def events(self, events: Sequence[BaseEvent]) -> Sequence[BaseEvent]:
        """`events` themselves when none holds a secret, else copies of those that do.
        Only free text is looked at (`FreeText` fields, nested ones included)."""
        # one look over all the batch's text says whether any field holds a secret
        # (every visit pays this, so it must be cheap; copying is for the rare hit)
        texts: list[str] = []
        for event in events:
            _collect_model(event, texts)
        if not self.may_hold("\x00".join(texts)):
            return events
        out = [self._model(e) for e in events]
        return events if all(a is b for a, b in zip(out, events, strict=True)) else out

    def _model(self, model: _Model) -> _Model:
        values = model.__dict__
        changed = {
            name: new
            for name in text_fields(type(model))
            if (new := self._value(values[name])) is not values[name]
        }
        return model.model_copy(update=changed) if changed else model

    def _value(self, value: Any) -> Any:
        """`value` itself when it holds no secret, else a masked copy (a dict's keys
        are left as they are)."""
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
            return self._model(value)
        return value


class MaskedStream:
    """One stream of output masked as it is printed. The end of what was printed is
    held back while a secret may be starting there, so a secret split across two
    writes (or two stored rows) is masked as if it had been printed at once."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.held = ""  # printed, not passed on yet
        self.before = ""  # the character before `held` (a key shape never follows some)

    def feed(self, text: str) -> str:
        """What may be passed on now, masked, of the stream so far."""
        return self._take(text, final=False)

    def end(self) -> str:
        """The rest, masked: the stream ended."""
        return self._take("", final=True)

    def _take(self, text: str, *, final: bool) -> str:
        text = self.before + self.held + text
        shown, cut = self.redactor.split(text, len(self.before), final=final)
        self.before, self.held = text[max(cut - 1, 0) : cut], text[cut:]
        return shown


def _collect_model(model: BaseModel, texts: list[str]) -> None:
    """Every string in `model`'s free text."""
    values = model.__dict__
    for name in text_fields(type(model)):
        _collect(values[name], texts)


def _collect(value: Any, texts: list[str]) -> None:
    kind = type(value)
    if kind is str:
        texts.append(value)
    elif kind is list or kind is tuple:
        for item in value:
            _collect(item, texts)
    elif kind is dict:
        for item in value.values():
            _collect(item, texts)
    elif isinstance(value, BaseModel):
        _collect_model(value, texts)
    elif isinstance(value, str):  # a str subclass
        texts.append(value)


def mask_secrets(text: str) -> str:
    """`text` with the secrets of this process's environment, and the known shapes,
    masked: what a store keeps of a run's input."""
    return Redactor.from_environ(os.environ).text(text)


__all__ = ["MASK", "MaskedStream", "Redactor", "mask_secrets"]
