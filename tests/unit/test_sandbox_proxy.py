"""How the egress proxy matches hosts against `allowed_domains` (as Wave matches them)."""

from __future__ import annotations

import pytest

from swell.sandbox.proxy import matches


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("api.example.com", True),  # exact
        ("API.Example.com.", True),  # case and a trailing dot do not matter
        ("deep.sub.example.org", True),  # *.example.org: any host ending in .example.org
        ("example.org", False),  # ... but not example.org itself (Wave's rule)
        ("badexample.org", False),
        ("example.com", False),
        ("api.example.com.evil.net", False),
    ],
)
def test_exact_hosts_and_star_suffixes(host: str, allowed: bool) -> None:
    assert matches(host, ["api.example.com", "*.example.org"]) is allowed
