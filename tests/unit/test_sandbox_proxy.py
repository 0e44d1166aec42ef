"""How the egress proxy matches hosts against `allowed_domains` (as Wave matches them)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from swell.sandbox.proxy import EgressProxy, matches


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


@pytest.mark.parametrize(
    ("ceiling", "host", "allowed"),
    [
        (None, "a.example.org", True),  # no runtime list: the persona's stands (Wave)
        (None, "other.net", True),
        (["*.example.org"], "a.example.org", True),  # within the runtime's list
        (["*.example.org"], "other.net", False),  # the persona cannot widen it
        (["a.example.org"], "b.example.org", False),  # *.example.org narrowed to one host
        ([], "a.example.org", False),
    ],
)
def test_a_persona_list_stays_within_the_runtime_ceiling(
    ceiling: list[str] | None, host: str, allowed: bool
) -> None:
    proxy = EgressProxy(["*.example.org", "other.net"], lambda *_: None, ceiling)
    try:
        assert proxy.allows(host) is allowed
        proxy.allow_url("http://model.local:8080/v1")  # an adapter's endpoint: always
        assert proxy.allows("model.local")
    finally:
        proxy.close()


def test_a_deep_tmpdir_does_not_make_the_socket_path_too_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AF_UNIX paths stop at 107 bytes: under a deep TMPDIR (a test runner's, a CI's)
    the proxy's socket goes under /tmp instead, and the proxy still serves."""
    deep = tmp_path / ("d" * 60) / ("e" * 40)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    proxy = EgressProxy(["example.org"], lambda *_: None)
    try:
        assert len(str(proxy.path)) < 108 and proxy.path.is_socket()
    finally:
        proxy.close()
