"""A fresh schema matches its migrations, on both dialects.

Both dialects' SQL live side by side in one list; this test opens a fresh SQLite file and a fresh
PostgreSQL schema, introspects the tables, columns (normalised type, nullability) and named
indexes, and asserts they are the same. A migration added for one dialect only, or with a
different column, fails here.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import pytest

from gateway.store import open_store, sqlite_path
from gateway.store.migrations import LATEST, MIGRATIONS
from gateway.store.rows import APPROVAL_COLUMNS
from gateway.store.sql import to_dialect

Schema = dict[str, Any]
_TYPES = {
    "text": "text",
    "real": "real",
    "double precision": "real",
    "integer": "int",
    "bigint": "int",
}


def _sqlite_schema(url: str) -> Schema:
    conn = sqlite3.connect(sqlite_path(url))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        columns: dict[str, dict[str, tuple[str, bool]]] = {}
        indexes: dict[str, set[tuple[str, bool]]] = {}
        for table in tables:
            if table.startswith("sqlite_"):
                continue
            columns[table] = {
                name: (_TYPES[ctype.lower()], bool(notnull or pk))
                for _, name, ctype, notnull, _, pk in conn.execute(f"PRAGMA table_info({table})")
            }
            indexes[table] = {
                (name, bool(unique))
                for _, name, unique, *_ in conn.execute(f"PRAGMA index_list({table})")
                if not name.startswith("sqlite_autoindex_")
            }
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    finally:
        conn.close()
    return {"columns": columns, "indexes": indexes, "versions": versions}


async def _pg_schema(url: str) -> Schema:
    schema = parse_qs(urlsplit(url).query)["search_path"][0]
    conn = await asyncpg.connect(url)
    try:
        columns: dict[str, dict[str, tuple[str, bool]]] = {}
        for r in await conn.fetch(
            "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
            " WHERE table_schema = $1",
            schema,
        ):
            columns.setdefault(r["table_name"], {})[r["column_name"]] = (
                _TYPES[r["data_type"]],
                r["is_nullable"] == "NO",
            )
        indexes: dict[str, set[tuple[str, bool]]] = {t: set() for t in columns}
        for r in await conn.fetch(
            "SELECT t.relname AS tbl, i.relname AS idx, x.indisunique AS uniq FROM pg_index x"
            " JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace"
            " WHERE n.nspname = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
            schema,
        ):
            indexes[r["tbl"]].add((r["idx"], r["uniq"]))
        versions = [r[0] for r in await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")]
    finally:
        await conn.close()
    return {"columns": columns, "indexes": indexes, "versions": versions}


async def _fresh(url: str) -> None:
    for _ in range(2):  # the second open must find nothing to do
        store = open_store(url)
        await store.open()
        await store.close()


async def test_fresh_schemas_match_their_migrations(tmp_path: Path, pg_url: str) -> None:
    db_url = f"sqlite:///{tmp_path / 'fresh.db'}"
    await _fresh(db_url)
    await _fresh(pg_url)
    lite, pg = _sqlite_schema(db_url), await _pg_schema(pg_url)
    expected_versions = [m.version for m in MIGRATIONS]
    assert lite["versions"] == pg["versions"] == expected_versions  # migrating twice applied nothing twice
    assert lite["versions"][-1] == LATEST
    # The one difference, on purpose (migration 15): SQLite's audit heads are its approvals' last
    # events, sealed up to a watermark; PostgreSQL keeps a locked head row per approval.
    lite_only, pg_only = {"audit_seal"}, {"audit_heads"}
    assert set(lite["columns"]) - set(pg["columns"]) == lite_only
    assert set(pg["columns"]) - set(lite["columns"]) == pg_only
    same = set(lite["columns"]) - lite_only
    assert {t: lite["columns"][t] for t in same} == {t: pg["columns"][t] for t in same}
    assert {t: lite["indexes"][t] for t in same} == {t: pg["indexes"][t] for t in same}
    # v1 anchors: the row codecs and the claim queries rely on these.
    assert set(APPROVAL_COLUMNS) <= set(pg["columns"]["approvals"])
    assert {"approvals", "events", "outbox", "cards", "resume_jobs", "journal", "inbound"} <= set(pg["columns"])
    assert ("outbox_one_post", True) in pg["indexes"]["outbox"]
    assert pg["columns"]["approvals"]["version"] == ("int", True)


async def test_every_migration_has_both_dialects() -> None:
    versions = [m.version for m in MIGRATIONS]
    assert versions == sorted(set(versions)) and versions[0] == 1
    for m in MIGRATIONS:
        assert m.sqlite.strip() and m.postgres.strip(), f"migration {m.version} lacks a dialect"


async def test_events_are_append_only_on_postgres(pg_url: str) -> None:
    await _fresh(pg_url)
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("INSERT INTO events (approval_id, kind, at, data) VALUES ('a', 'x', 0, '{}')")
        for sql in ("UPDATE events SET kind = 'y'", "DELETE FROM events"):
            try:
                await conn.execute(sql)
            except asyncpg.RaiseError as exc:
                assert "append-only" in str(exc)
            else:
                raise AssertionError(f"{sql} was allowed")
    finally:
        await conn.close()


async def test_a_lower_migration_arriving_after_a_higher_one_is_still_applied(tmp_path: Path) -> None:
    """Migration numbers are assigned ahead of time: a database at 1, 2 and 7 must still get 5."""
    import sqlite3

    from gateway.store.migrations import MIGRATIONS
    from gateway.store.sqlite import SQLiteStore

    path = tmp_path / "old.db"
    store = SQLiteStore(str(path))
    await store.open()
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM schema_migrations WHERE version = 5")
    conn.execute("ALTER TABLE approvals DROP COLUMN sealed")
    conn.commit()
    conn.close()
    store = SQLiteStore(str(path))
    await store.open()
    await store.close()
    conn = sqlite3.connect(path)
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    columns = [r[1] for r in conn.execute("PRAGMA table_info(approvals)")]
    conn.close()
    assert versions == [m.version for m in MIGRATIONS]
    assert "sealed" in columns


async def _execute(url: str, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Raw statements (`$n` marks) on either backend, as an older gateway would have written."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(sqlite_path(url))
        with conn:
            for sql, params in statements:
                conn.execute(to_dialect(sql, "sqlite"), params)
        conn.close()
        return
    pg = await asyncpg.connect(url)
    try:
        for sql, params in statements:
            await pg.execute(sql, *params)
    finally:
        await pg.close()


async def test_v17_puts_each_run_and_key_in_its_agents_namespace(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upgrading, on both backends: an agent's approvals, and the journal of a run an agent
    owned, go to that agent's namespace; the rest (operators', in-process callers', those from
    before principals) to no agent's, where operators and resume tokens reach them as before."""
    import importlib

    from gateway.store.rows import approval_values
    from tests.store.conftest import make_approval

    for module in ("gateway.store.sqlite.migrate", "gateway.store.postgres.migrate"):
        older = tuple(m for m in MIGRATIONS if m.version < 17)
        monkeypatch.setattr(importlib.import_module(module), "MIGRATIONS", older)
    store = open_store(store_url)
    await store.open()
    await store.close()
    billing = make_approval(key="k-1", run_id="run-a", agent="agent:billing")
    legacy = make_approval(key="k-2", run_id="run-l")  # before principals: no agent
    by_operator = make_approval(key="k-3", run_id="run-a", agent="operator:alice")
    v16 = APPROVAL_COLUMNS[: APPROVAL_COLUMNS.index("code_version") + 1]  # the later ones are not there yet
    marks = ", ".join(f"${i + 1}" for i in range(len(v16)))
    insert = f"INSERT INTO approvals ({', '.join(v16)}) VALUES ({marks})"
    step = (
        "INSERT INTO journal (run_id, name, status, output, attempts, started_at, finished_at)"
        " VALUES ($1, 'fetch', 'succeeded', '1', 1, 0, 0)"
    )
    run = "INSERT INTO runs (run_id, owner, created_at) VALUES ($1, $2, 0)"  # a v16 run's one owner
    await _execute(
        store_url,
        [(insert, approval_values(a)[: len(v16)]) for a in (billing, legacy, by_operator)]
        + [(run, ("run-a", "agent:billing")), (run, ("run-l", ""))]
        + [(step, (r,)) for r in ("run-a", "run-l", "run-x")],  # run-x: journaled in process, never owned
    )
    monkeypatch.undo()
    store = open_store(store_url)
    await store.open()
    try:
        assert [s.name for s in await store.get_steps("run-a", namespace="agent:billing")] == ["fetch"]
        assert await store.get_steps("run-a", namespace="") == []
        assert [s.name for s in await store.get_steps("run-l", namespace="")] == ["fetch"]
        assert [s.name for s in await store.get_steps("run-x", namespace="")] == ["fetch"]
        assert await store.run_namespaces("run-a") == ["", "agent:billing"]  # the operator's approval
        assert await store.run_namespaces("run-l") == [""]
        # the keys are per namespace now: billing's key is free for another agent, not for billing
        assert (await store.create_approval(make_approval(key="k-1", agent="agent:mail"), [], []))[1]
        stored, created = await store.create_approval(make_approval(key="k-1", agent="agent:billing"), [], [])
        assert not created and stored.id == billing.id
        stored, created = await store.create_approval(make_approval(key="k-2"), [], [])
        assert not created and stored.id == legacy.id
    finally:
        await store.close()
