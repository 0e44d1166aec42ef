"""The circuit breaker's error normalization: same failure, same key."""

from __future__ import annotations

import pytest

from swell.engine.loop.limits import normalize_error

FIRST = """\
2024-05-01T12:00:01.123Z FAILED tests/test_api.py::test_login - AssertionError
  File "/tmp/pytest-of-ci/pytest-12/test_login0/app.py", line 42, in login
    raise AssertionError(f"token {token} expired after 30s")
src/app/auth.py:88:13: error: session 3f2a9c1d8e7b expired (request 123e4567-e89b-12d3-a456-426614174000)
<Session object at 0x7f3a2b1c9d80> closed at 12:00:04
===== 1 failed, 41 passed in 3.27s =====
"""

SECOND = """\
2025-01-09 08:30:59,999+02:00 FAILED tests/test_api.py::test_login - AssertionError
  File "/tmp/pytest-of-ci/pytest-97/test_login3/app.py", line 57, in login
    raise AssertionError(f"token {token} expired after 120 seconds")
src/app/auth.py:91:5: error: session a1b2c3d4e5f60718 expired (request 9f0c4d2a-1111-4b2b-8c3c-abcdefabcdef)
<Session object at 0x55d0aa11ff00> closed at 8:31:02
===== 1 failed, 40 passed in 12.9s =====
"""


def test_same_failure_with_different_incidentals_normalizes_equal() -> None:
    assert normalize_error(FIRST) == normalize_error(SECOND)
    # and nothing incidental is left
    key = normalize_error(FIRST)
    for incidental in ("2024", "3f2a9c1d8e7b", "123e4567", "0x7f3a", "pytest-12", ":88", "3.27"):
        assert incidental not in key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("2024-05-01T12:00:01Z boom", "2026-12-31T23:59:59.5+01:00 boom"),
        ("[12:00:01] boom", "[23:59:59.250] boom"),
        ("app.py:12:5: E501 line too long", "app.py:140:1: E501 line too long"),
        ('File "x.py", line 12, in f', 'File "x.py", line 9999, in f'),
        ("syntax error at line 3 col 7", "syntax error at line 10 col 1"),
        ("object at 0x7f3a2b1c9d80", "object at 0x55d0aa11ff00"),
        ("commit 3f2a9c1 is bad", "commit a1b2c3d4e5f6a7b8c9d0 is bad"),
        ("run 123e4567-e89b-12d3-a456-426614174000", "run 9F0C4D2A-1111-4B2B-8C3C-ABCDEFABCDEF"),
        ("cannot open /tmp/tmpab12cd/out.txt", "cannot open /tmp/pytest-3/x/out.txt"),
        ("/var/folders/xy/T/a: denied", "/private/var/folders/zz/T/b: denied"),
        ("write '/var/tmp/cache-1/x'", "write '/var/tmp/cache-2/y'"),
        (
            r"C:\Users\bob\AppData\Local\Temp\tmp1\x.txt gone",
            r"C:\Users\ci\AppData\Local\Temp\pytest-7\y.txt gone",
        ),
        ("timed out after 30s", "timed out after 120 seconds"),
        ("took 15ms", "took 2.5 sec"),
        ("expected 3 items, got 4", "expected 5 items, got 17"),
        ("3 failed, 10 passed in 0.52s", "3 failed, 11 passed in 1.07s"),
        ("  spaced   out\n\n  lines  ", "spaced out\nlines"),
    ],
)
def test_incidental_differences_are_removed(a: str, b: str) -> None:
    assert normalize_error(a) == normalize_error(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "ModuleNotFoundError: No module named 'requests'",
            "ModuleNotFoundError: No module named 'yaml'",
        ),
        ("AssertionError: test_login failed", "AssertionError: test_logout failed"),
        ("FAILED test_case_1 - assert False", "FAILED test_case_2 - assert False"),
        ("E501 line too long", "E302 line too long"),
        ("permission denied: config.yaml", "file not found: config.yaml"),
        ("cannot open /home/me/app/tmp/a.txt", "cannot open /home/me/app/tmp/b.txt"),
        ("TypeError: unsupported operand", "ValueError: unsupported operand"),
        ("deadbeef", "cafebabe"),  # words made of hex letters are not ids
    ],
)
def test_semantically_different_errors_stay_different(a: str, b: str) -> None:
    assert normalize_error(a) != normalize_error(b)


def test_long_errors_keep_their_tail_within_the_limit() -> None:
    text = "noise line\n" * 1000 + "the real cause"
    key = normalize_error(text, limit=200)
    assert len(key) <= 200
    assert key.endswith("the real cause")


# --- progress: failure counts and failing names are kept ------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("3 tests failed", "2 tests failed"),
        ("2 tests failed", "1 test failed"),
        ("===== 3 failed, 41 passed in 3.27s =====", "===== 2 failed, 42 passed in 2.9s ====="),
        ("FAILED (failures=3, errors=1)", "FAILED (failures=2, errors=1)"),
        ("Tests run: 10, Failures: 2, Errors: 0", "Tests run: 10, Failures: 1, Errors: 0"),
        ("Found 12 errors in 3 files", "Found 7 errors in 3 files"),
        ("✖ 5 problems (5 errors, 0 warnings)", "✖ 4 problems (4 errors, 0 warnings)"),
        ("3 of 10 tests failed", "2 of 10 tests failed"),
        (
            "FAILED t.py::test_div[3-0] - ZeroDivisionError",
            "FAILED t.py::test_div[4-0] - ZeroDivisionError",
        ),
        ("FAILED test_login - assert False", "FAILED test_logout - assert False"),
        # more failures is movement too: a loop getting worse is stopped by max_visits
        ("1 failed, 9 passed", "4 failed, 6 passed"),
    ],
)
def test_moving_failure_counts_and_names_are_progress(a: str, b: str) -> None:
    assert normalize_error(a) != normalize_error(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # the same count with incidental differences is the same failure
        ("3 tests failed at 12:00:01 in 3.2s", "3 tests failed at 13:10:07 in 4.9s"),
        ("2 failed, 41 passed in 3.27s", "2 failed, 40 passed in 12.9s"),
        (
            "Found 3 errors in 2 files (checked 10 files)",
            "Found 3 errors in 4 files (checked 12 files)",
        ),
        # numbers that count nothing failing are still removed
        ("error 404 at step 3", "error 500 at step 9"),
        ("FAIL: only 1 attempts", "FAIL: only 2 attempts"),
    ],
)
def test_same_counts_stay_the_same_failure(a: str, b: str) -> None:
    assert normalize_error(a) == normalize_error(b)


def test_counts_are_kept_as_written() -> None:
    assert normalize_error("2 tests failed in 0.5s") == "2 tests failed in <dur>"
    assert normalize_error("FAILED (failures=2)") == "failed (failures=2)"


def test_the_fingerprint_ignores_case_as_waves() -> None:
    assert normalize_error("Error: Connection REFUSED") == normalize_error(
        "error: connection refused"
    )
