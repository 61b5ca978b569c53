"""Store URLs by SQLAlchemy's slash convention, and read-only commands that never create a store
(issue 16; issue 20 D14)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.stores import StoreMissing, open_store, sqlite_path
from slateboard.stores.sqlite import default_path


def test_three_slashes_are_relative_four_are_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert sqlite_path("sqlite:///boards.db") == tmp_path / "boards.db"
    assert sqlite_path("sqlite:///sub/boards.db?snapshot_every=3") == tmp_path / "sub" / "boards.db"
    assert sqlite_path("sqlite:////abs/boards.db") == Path("/abs/boards.db")
    assert sqlite_path("sqlite:boards.db") == tmp_path / "boards.db"
    assert sqlite_path("sqlite://") == default_path()
    assert sqlite_path("sqlite:///") == default_path()


def test_sqlite_relative_url_writes_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    async def go() -> str:
        store = await open_store("sqlite:///boards.db")
        try:
            return str(store.path)  # type: ignore[attr-defined]  # the SQLite store's
        finally:
            await store.close()

    where = asyncio.run(go())
    assert Path(where) == tmp_path / "boards.db"
    assert (tmp_path / "boards.db").stat().st_size > 0


@pytest.mark.parametrize("command", [["boards"], ["log", "abc"], ["show", "abc"], ["replay", "abc", "--verify"]])
def test_read_only_commands_never_create_a_store(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nested" / "typo.db"
    for url in (str(missing), f"sqlite:///{missing}"):
        result = CliRunner().invoke(app, [*command, "--store", url])
        assert result.exit_code != 0
        assert "no store at" in result.output
        assert not missing.exists() and not missing.parent.exists()


@pytest.mark.parametrize("command", [["boards"], ["replay", "abc", "--verify"]])
def test_an_empty_file_is_refused_and_left_empty(tmp_path: Path, command: list[str]) -> None:
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    result = CliRunner().invoke(app, [*command, "--store", f"sqlite:///{empty}"])
    assert result.exit_code != 0
    assert "empty file" in result.output
    assert empty.stat().st_size == 0
    assert not (tmp_path / "empty.db-wal").exists()


def test_read_only_open_of_an_existing_store_works(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'real.db'}"

    async def go() -> None:
        await (await open_store(url)).close()
        await (await open_store(url, create=False)).close()
        with pytest.raises(StoreMissing):
            await open_store(f"sqlite:///{tmp_path / 'other.db'}", create=False)

    asyncio.run(go())
    listed = CliRunner().invoke(app, ["boards", "--store", url, "--json"])
    assert listed.exit_code == 0 and listed.output.strip() == "[]"


def _pg_dsn() -> str:
    import os

    return os.environ.get("SLATEBOARD_TEST_PG") or "postgresql://postgres@127.0.0.1:5432/test"


def test_read_only_commands_never_create_a_postgresql_store() -> None:
    # Issue 20, D14 on PostgreSQL: a read-only command against a schema with no slateboard
    # tables is refused, and neither the schema nor any table is created.
    psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    import uuid

    schema = f"sbt_{uuid.uuid4().hex[:16]}"
    try:
        with psycopg.connect(_pg_dsn(), autocommit=True, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        pytest.skip(f"no PostgreSQL server at $SLATEBOARD_TEST_PG or 127.0.0.1:5432 ({exc})")
    url = f"{_pg_dsn()}?schema={schema}"
    for command in (["boards"], ["log", "abc"], ["replay", "abc", "--verify"]):
        result = CliRunner().invoke(app, [*command, "--store", url])
        assert result.exit_code != 0, command
        assert "holds no slateboard store" in result.output, result.output
    with psycopg.connect(_pg_dsn(), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)).fetchone()
    assert found is None


def test_serve_refuses_a_store_that_does_not_exist(tmp_path: Path) -> None:
    # The dashboard only reads: it must not create the store it was pointed at (D14).
    missing = tmp_path / "nested" / "typo.db"
    result = CliRunner().invoke(app, ["serve", "--store", f"sqlite:///{missing}", "--port", "0", "--no-open"])
    assert result.exit_code != 0
    assert "no store at" in result.output
    assert not missing.exists() and not missing.parent.exists()


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://:memory:", "sqlite:///:memory:?snapshot_every=5"])
async def test_sqlite_memory_is_an_in_memory_store(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: as in SQLAlchemy, ``sqlite:///:memory:`` names no file: nothing is written."""
    monkeypatch.chdir(tmp_path)
    from slateboard.stores import MemoryStore

    st = await open_store(url)
    try:
        assert isinstance(st, MemoryStore)
    finally:
        await st.close()
    assert list(tmp_path.iterdir()) == []
