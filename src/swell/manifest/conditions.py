"""Edge conditions: `outcome=success`, `context.KEY=VALUE`, `!=`, joined by `&&` / `||`.

Grammar (whitespace around tokens is ignored; `&&` binds tighter than `||`):

    condition := conj ( "||" conj )*
    conj      := clause ( "&&" clause )*
    clause    := subject ( "=" | "==" | "!=" ) value
    subject   := "outcome" | "context." KEY
    value     := text up to the next && / || (quote it to include them)

`outcome` values are `success` and `failure` (`fail` is accepted for Wave).
An empty or missing condition always holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

OUTCOMES = {"success": "success", "failure": "failure", "fail": "failure", "failed": "failure"}


class ConditionError(ValueError):
    """The condition does not parse."""


@dataclass(frozen=True)
class Clause:
    subject: str  # "outcome" or "context.KEY"
    negate: bool
    value: str

    @property
    def context_key(self) -> str | None:
        return self.subject[len("context.") :] if self.subject.startswith("context.") else None


@dataclass(frozen=True)
class Condition:
    """Disjunction of conjunctions of clauses; empty means always true."""

    any_of: tuple[tuple[Clause, ...], ...]

    def holds(self, outcome: str, context: Mapping[str, str]) -> bool:
        if not self.any_of:
            return True
        return any(all(_clause_holds(c, outcome, context) for c in conj) for conj in self.any_of)

    def context_keys(self) -> list[str]:
        return [c.context_key for conj in self.any_of for c in conj if c.context_key]


def _clause_holds(clause: Clause, outcome: str, context: Mapping[str, str]) -> bool:
    if clause.subject == "outcome":
        equal = OUTCOMES.get(clause.value, clause.value) == outcome
    else:
        key = clause.context_key or ""
        equal = key in context and context[key] == clause.value
    return equal != clause.negate


_CLAUSE = re.compile(r"^\s*(outcome|context\.[A-Za-z0-9_.-]+)\s*(!=|==|=)\s*(.*?)\s*$", re.DOTALL)


def _split(text: str, sep: str) -> list[str]:
    """`text` cut at each `sep` that is not inside a quoted value (`context.k='a||b'`)."""
    parts: list[str] = []
    start, quote, i = 0, "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"" and text[:i].rstrip().endswith("="):
            quote = ch
        elif text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


@lru_cache(maxsize=1024)
def parse_condition(text: str | None) -> Condition:
    """Parse an edge condition; raises ConditionError with a readable reason."""
    if text is None or not text.strip():
        return Condition(())
    disjuncts: list[tuple[Clause, ...]] = []
    for part in _split(text, "||"):
        clauses: list[Clause] = []
        for raw in _split(part, "&&"):
            if not raw.strip():
                raise ConditionError(
                    f"condition {text.strip()!r} has an empty part around && or ||"
                )
            match = _CLAUSE.match(raw)
            if not match:
                raise ConditionError(
                    f"cannot read condition {raw.strip()!r}: expected outcome=VALUE or "
                    "context.KEY=VALUE (with = or !=)"
                )
            subject, op, value = match.groups()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            if subject == "outcome" and value not in OUTCOMES:
                raise ConditionError(f"outcome must be success or failure, not {value!r}")
            if subject == "outcome":
                value = OUTCOMES[value]
            clauses.append(Clause(subject, op == "!=", value))
        disjuncts.append(tuple(clauses))
    return Condition(tuple(disjuncts))
