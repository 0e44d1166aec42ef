"""The conformance suite, continued (every backend): running visits' output chunks
(`write_output`, `drop_output`, `output`), which live outside the event log."""

from __future__ import annotations

import pytest

from swell.store.protocols import Capability, Store
from swell.streaming import OutputChunk

from .conftest import Backend, NewRun, needs

TS = "2026-11-24T10:00:00.000Z"


@pytest.fixture(autouse=True)
def _declared(store: Store) -> None:
    needs(store, Capability.OUTPUT)


def chunk(step: str, visit: int, seq: int, text: str, stream: str = "stdout") -> OutputChunk:
    return OutputChunk("r1", step, visit, stream, seq, TS, text)  # type: ignore[arg-type]


def test_chunks_read_back_in_the_order_they_were_stored(store: Store, new_run: NewRun) -> None:
    new_run("r1")
    store.write_output([chunk("build", 1, 1, "one\n"), chunk("build", 1, 2, "oops\n", "stderr")])
    store.write_output([chunk("test", 1, 1, "ok\n"), chunk("build", 1, 3, "two\n")])
    got = store.output("r1")
    assert [(c.step_id, c.seq, c.stream, c.text) for c in got] == [
        ("build", 1, "stdout", "one\n"),
        ("build", 2, "stderr", "oops\n"),
        ("test", 1, "stdout", "ok\n"),
        ("build", 3, "stdout", "two\n"),
    ]
    ids = [c.id for c in got]
    assert ids == sorted(ids) and len(set(ids)) == 4 and ids[0] > 0
    assert [c.text for c in store.output("r1", after_id=ids[1])] == ["ok\n", "two\n"]
    assert [c.text for c in store.output("r1", step_id="build")] == ["one\n", "oops\n", "two\n"]
    assert store.output("r1", step_id="build", visit=2) == []
    assert store.output("other") == []
    assert got[0] == OutputChunk("r1", "build", 1, "stdout", 1, TS, "one\n", id=ids[0])


def test_dropping_removes_a_range_of_that_visit_only(store: Store, new_run: NewRun) -> None:
    new_run("r1")
    store.write_output([chunk("build", 1, n, f"{n}\n") for n in range(1, 6)])
    store.write_output([chunk("build", 2, 1, "again\n")])
    store.drop_output("r1", "build", 1, range(2, 4))
    assert [(c.visit, c.seq) for c in store.output("r1")] == [(1, 1), (1, 4), (1, 5), (2, 1)]


def test_a_chunk_written_twice_is_kept_once(store: Store, new_run: NewRun) -> None:
    new_run("r1")
    store.write_output([chunk("build", 1, 1, "first\n")])
    store.write_output([chunk("build", 1, 1, "second\n")])
    assert [c.text for c in store.output("r1")] == ["second\n"]


def test_another_handle_sees_chunks_once_written(backend: Backend, new_run: NewRun) -> None:
    new_run("r1")
    writer, reader = backend.open(), backend.open()
    writer.write_output([chunk("build", 1, 1, "live\n")])
    assert [c.text for c in reader.output("r1")] == ["live\n"]


def test_chunks_read_a_page_at_a_time(store: Store, new_run: NewRun) -> None:
    new_run("r1")
    store.write_output([chunk("build" if n % 2 else "test", 1, n, f"{n}\n") for n in range(1, 12)])
    whole = store.output("r1", step_id="build")
    pages, after = [], 0
    while page := store.output("r1", after_id=after, step_id="build", limit=2):
        pages.append([c.text for c in page])
        after = page[-1].id
    assert pages == [["1\n", "3\n"], ["5\n", "7\n"], ["9\n", "11\n"]]
    assert [c.text for c in whole] == [t for p in pages for t in p]
    assert store.output("r1", limit=0) == [] and len(store.output("r1", limit=None)) == 11
    for absurd in (2**63, 10**30):  # past any id: nothing, never a database error
        assert store.output("r1", after_id=absurd) == []
