"""`open_store` picks the backend from a location; the project's store is found without
loading the manifest; in-memory databases are private, or shared by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from swell.errors import StoreError
from swell.store.location import open_project_store, open_store, state_dir_for
from swell.store.memory import MemoryStore
from swell.store.sqlite.store import SqliteStore


def _sqlite(location: str | Path) -> SqliteStore:
    store = open_store(location)
    assert isinstance(store, SqliteStore)
    return store


def test_a_path_or_a_sqlite_url_opens_sqlite(tmp_path: Path) -> None:
    locations: list[tuple[str | Path, Path]] = [
        (tmp_path / "a" / "state.db", tmp_path / "a" / "state.db"),
        (str(tmp_path / "b.db"), tmp_path / "b.db"),
        (f"sqlite://{tmp_path}/c.db", tmp_path / "c.db"),
        (f"SQLite://{tmp_path}/d.db", tmp_path / "d.db"),
    ]
    for location, path in locations:
        store = _sqlite(location)
        assert store.path == path and path.is_file()
        store.close()


def test_swell_sync_is_read_when_the_store_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    normal = _sqlite(tmp_path / "normal.db")
    monkeypatch.setenv("SWELL_SYNC", "full")
    full = _sqlite(tmp_path / "full.db")
    assert [s.db.execute("PRAGMA synchronous").fetchone()[0] for s in (normal, full)] == [1, 2]
    normal.close()
    full.close()
    with pytest.raises(StoreError, match="unknown SQLite synchronous level 'sometimes'"):
        SqliteStore(tmp_path / "x.db", synchronous="sometimes")


@pytest.mark.parametrize(
    "location", ["postgresql:localhost", "redis://x", "sqlite:", "sqlite:state.db"]
)
def test_an_unknown_location_names_the_supported_ones(location: str) -> None:
    with pytest.raises(StoreError) as err:
        open_store(location)
    assert str(err.value) == (
        f"cannot open a store at '{location}': use a path, sqlite:///PATH, "
        "postgresql://HOST/DATABASE or memory:"
    )


def test_an_unopenable_file_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match="cannot open the state database"):
        open_store(tmp_path / "file" / "state.db")


def _runs(store: object) -> list[str]:
    assert isinstance(store, MemoryStore)
    return [r.id for r in store.list_runs()]


def _create(store: object, run_id: str) -> None:
    assert isinstance(store, MemoryStore)
    store.create_run(run_id=run_id, pipeline="p", input_text="", workspace="/ws")


def test_memory_databases_are_private_unless_a_handle_is_shared() -> None:
    private, other_private = open_store("memory:"), open_store("memory:")
    _create(private, "mine")
    assert (_runs(private), _runs(other_private)) == (["mine"], [])
    assert isinstance(private, MemoryStore)
    second = MemoryStore(private.database)  # another handle on the same database
    _create(second, "theirs")
    assert _runs(private) == ["theirs", "mine"]
    second.close()
    assert _runs(private) == ["theirs", "mine"]  # the database outlives a closed handle
    with pytest.raises(StoreError, match="the store memory: is closed"):
        second.list_runs()
    for store in (private, other_private):
        store.close()


def test_the_project_store_is_found_from_a_subdirectory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_state: Path
) -> None:
    root = tmp_path / "project"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "wave.yaml").write_text("not: even a valid manifest\n")  # never loaded
    store = open_project_store(root / "src" / "deep")
    assert isinstance(store, SqliteStore) and store.path == isolated_state / "state.db"
    store.close()
    monkeypatch.delenv("SWELL_STATE_DIR")
    assert state_dir_for(root) == root / ".swell"
    store = open_project_store(root)
    assert isinstance(store, SqliteStore) and store.path == root / ".swell" / "state.db"
    store.close()
