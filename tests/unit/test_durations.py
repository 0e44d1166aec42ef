"""Durations as written in manifests."""

from __future__ import annotations

import pytest

from swell.manifest.durations import DurationTooLong, parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (90, 90.0),
        (1.5, 1.5),
        (0, 0.0),
        ("90", 90.0),
        ("2.5", 2.5),
        ("90s", 90.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("500ms", 0.5),
        ("1h30m", 5400.0),
        ("1h 30m 15s", 5415.0),
        ("  45s ", 45.0),
        ("1.5h", 5400.0),
        ("0s", 0.0),
    ],
)
def test_valid_durations(value: str | int | float, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "abc", "5x", "m5", "5m10", "-5s", "10S", "1h-30m", "s"])
def test_malformed_durations_say_how_to_write_one(value: str) -> None:
    with pytest.raises(ValueError, match=r"invalid duration .* \(use e\.g\. 30s, 5m, 2h\)"):
        parse_duration(value)


def test_negative_numbers_and_booleans_are_rejected() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        parse_duration(-1)
    with pytest.raises(ValueError, match="invalid duration True"):
        parse_duration(True)


@pytest.mark.parametrize("value", ["99999999999999d", "9" * 400, "9" * 400 + "s", 1e400, 4e9])
def test_durations_past_a_century_are_refused(value: str | float) -> None:
    with pytest.raises(DurationTooLong, match=r"^duration .* is too long \(at most 100 years\)$"):
        parse_duration(value)
    assert parse_duration("36500d") == 36500 * 86400.0  # a century is still a duration
