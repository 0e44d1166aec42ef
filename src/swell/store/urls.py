"""Store URLs as messages and files show them (shared by `location` and the backends)."""

from __future__ import annotations

import re

_PASSWORD = re.compile(r"(://[^:/@?#]*:)[^@/?#]*@")  # postgresql://user:PASSWORD@host
_PASSWORD_PARAM = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)  # ?password=...


def redacted(url: str) -> str:
    """A store URL without its password."""
    return _PASSWORD_PARAM.sub(r"\1***", _PASSWORD.sub(r"\1***@", url))
