"""`swell thread` paging: budgets, the omitted line, chaining hints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from swell.threads.retrieval import page_json, page_text, render, retrieve


@dataclass
class R:
    id: int
    role: str | None
    ts: str
    metadata: dict[str, Any]
    content: str


@dataclass
class Reader:
    rounds: list[R]
    fetched: list[tuple[int, int]] = field(default_factory=list)

    def round_count(self, run_id: str, thread: str | None) -> int:
        return len(self.rounds)

    def rounds_between(self, run_id: str, thread: str | None, first: int, last: int) -> list[R]:
        self.fetched.append((first, last))
        return [r for r in self.rounds if first <= r.id <= last]


def make(n: int, size: int = 10) -> Reader:
    return Reader(
        [
            R(i, "step", "2026-11-22T00:00:00Z", {"outcome": "success"}, "x" * size)
            for i in range(1, n + 1)
        ]
    )


def ids(page: Any) -> list[int]:
    return [r.id for r in page.head + page.tail]


def test_format_of_one_round() -> None:
    text = render(
        R(
            3,
            "implement",
            "2026-11-22T03:40:01.123Z",
            {"outcome": "failure", "exit_code": 1},
            "boom\n",
        )
    )
    assert text == (
        "[#3 implement] 2026-11-22T03:40:01.123Z\n---\noutcome: failure\nexit_code: 1\n---\nboom\n"
    )
    assert render(R(1, None, "t", {}, "")).startswith("[#1 unknown] t\n---\n{}\n---\n")


def test_fewer_rounds_than_the_budget_shows_all_without_a_hint() -> None:
    page = retrieve(make(5), "run", budget=100_000)
    assert ids(page) == [1, 2, 3, 4, 5] and page.omitted == 0 and "omitted" not in page_text(page)


def size(reader: Reader, *numbers: int) -> int:
    return sum(len(render(reader.rounds[n - 1])) for n in numbers)


def test_default_page_is_first_round_then_newest_that_fit() -> None:
    reader = make(50)
    page = retrieve(reader, "run", budget=size(reader, 1, 48, 49, 50))
    assert ids(page) == [1, 48, 49, 50]
    assert page.omitted == 46 and page.load_before == 48
    text = page_text(page)
    assert (
        "... 46 messages omitted (use --before 48 to load: swell thread run --before 48) ..."
        in text
    )
    assert text.index("[#1 ") < text.index("omitted") < text.index("[#48 ")


def test_exactly_at_the_budget_includes_the_round() -> None:
    reader = make(10)
    assert ids(retrieve(reader, "run", budget=size(reader, 1, 9, 10))) == [1, 9, 10]
    assert ids(retrieve(reader, "run", budget=size(reader, 1, 9, 10) - 1)) == [1, 10]
    assert ids(retrieve(reader, "run", budget=1)) == [1, 10]  # the newest is always shown


def test_a_round_bigger_than_the_budget_is_still_shown_whole() -> None:
    reader = make(3)
    reader.rounds[2].content = "y" * 50_000
    page = retrieve(reader, "run", budget=100)
    assert ids(page) == [1, 3] and page.tail[0].content == "y" * 50_000
    before = retrieve(reader, "run", budget=100, before=3)
    assert ids(before) == [2] and before.omitted == 0


@pytest.mark.parametrize(
    ("n", "size", "budget"), [(2, 10, 50), (37, 10, 200), (200, 300, 2000), (9, 1, 1)]
)
def test_following_the_hints_visits_every_round_once(n: int, size: int, budget: int) -> None:
    reader = make(n, size)
    seen: list[int] = []
    page = retrieve(reader, "run", budget=budget)
    seen += ids(page)
    while page.load_before is not None:
        page = retrieve(reader, "run", budget=budget, before=page.load_before)
        seen += ids(page)
    assert sorted(seen) == list(range(1, n + 1)) and len(seen) == n


def test_cost_depends_on_the_budget_not_the_run_length() -> None:
    small, large = make(1_000), make(100_000)
    retrieve(small, "run", budget=400)
    retrieve(large, "run", budget=400)
    span = sum(hi - lo + 1 for lo, hi in large.fetched)
    assert span == sum(hi - lo + 1 for lo, hi in small.fetched) and span < 40


def test_before_round_two_or_less_has_nothing() -> None:
    page = retrieve(make(5), "run", before=2)
    assert ids(page) == [] and page.omitted == 0


def test_json_page() -> None:
    reader = make(20)
    data = page_json(
        retrieve(reader, "run", thread="impl", budget=len(render(reader.rounds[0])) * 2)
    )
    assert data["thread"] == "impl" and data["total"] == 20
    assert [r["id"] for r in data["rounds"]] == [1, 20]
    assert data["omitted"] == {"count": 18, "before": 20}
