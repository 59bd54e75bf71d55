"""The named SQL (gateway/store/sql/) is whole and honest: every name is used and defined, each
statement prepares on its dialect's real database, the column lists match the row codecs, and
an installed wheel (not only this tree) finds the .sql files."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from gateway.store import open_store, sqlite_path
from gateway.store.migrations import MIGRATIONS
from gateway.store.rows import APPROVAL_COLUMNS, POLICY_COLUMNS
from gateway.store.sql import DIALECTS, in_list, multi_row, parse, queries, to_dialect
from tests.helpers import source_copy

ROOT = Path(__file__).resolve().parents[2]
_USE = re.compile(r"\bQ\.(\w+)|queries\(\"(?:sqlite|postgres)\"\)\.(\w+)")


def _used_names() -> set[str]:
    names: set[str] = set()
    for path in [*(ROOT / "gateway" / "store").rglob("*.py"), *(ROOT / "bench").glob("*.py")]:
        for match in _USE.finditer(path.read_text()):
            names.add(match[1] or match[2])
    return names


def test_every_query_is_used_and_every_use_is_defined() -> None:
    used = _used_names()
    defined = queries("sqlite").names | queries("postgres").names
    assert used - defined == set(), "used but defined in no .sql file"
    assert defined - used == set(), "defined but never used: dead SQL"


def test_a_name_is_defined_once() -> None:
    with pytest.raises(ValueError, match="twice"):
        parse("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;")
    for dialect in DIALECTS:  # queries() refuses a dialect file that redefines a shared name
        assert queries(dialect).names


def test_placeholders_keep_their_numbers_on_sqlite() -> None:
    assert to_dialect("a = $1 AND b = $12 OR c = $1", "sqlite") == "a = ?1 AND b = ?12 OR c = ?1"
    assert to_dialect("a = $1", "postgres") == "a = $1"
    head, row, tail = multi_row(queries("sqlite").insert_job)
    assert head.startswith("INSERT INTO resume_jobs")
    assert row == "(?, ?, 'queued', 0, ?, ?, ?)" and tail.strip() == "ON CONFLICT (approval_id) DO NOTHING"
    with pytest.raises(ValueError, match="once each"):
        multi_row(queries("sqlite").insert_posted)  # $3 thrice: not a multi-row insert


def _columns(text: str) -> list[str]:
    return [c.strip().split(" = ")[0].strip() for c in text.split(",")]


def test_the_column_lists_match_the_row_codecs() -> None:
    lite, pg = queries("sqlite"), queries("postgres")
    insert = re.search(r"INSERT INTO approvals \((.*?)\)", lite.insert_approval, re.S)
    assert insert and _columns(insert[1]) == [*APPROVAL_COLUMNS, "namespace"]  # the namespace: $30
    update = re.search(r"SET(.*?)wake_owner", lite.save_transition, re.S)
    assert update and _columns(update[1])[:-1] == list(APPROVAL_COLUMNS[1:])
    policy = re.search(r"SET(.*?)wake_owner", lite.save_policy_transition, re.S)
    assert policy and _columns(policy[1])[:-1] == list(POLICY_COLUMNS)
    claim = re.search(r"SELECT(.*?)FROM approvals", lite.claim_due, re.S)
    assert claim and _columns(claim[1]) == list(APPROVAL_COLUMNS)  # decoded by position
    batch = re.search(r"AS v\((.*?)\)", pg.save_policy_transitions)
    assert batch and _columns(batch[1]) == [*POLICY_COLUMNS, "id", "expected"]


async def test_every_sqlite_statement_prepares_on_a_migrated_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    store = open_store(url)
    await store.open()
    await store.close()
    conn = sqlite3.connect(sqlite_path(url))
    try:
        q = queries("sqlite")
        for name in sorted(q.names):
            sql = in_list(q[name], 2)
            if not sql.lstrip().upper().startswith("CREATE"):
                _explain(conn, sql)
    finally:
        conn.close()


def _explain(conn: sqlite3.Connection, sql: str) -> None:
    """Prepare without running: EXPLAIN needs its parameters bound, any value does."""
    marks = {int(n) for n in re.findall(r"\?(\d+)", sql)}
    count = max(marks, default=0) + sql.count("?") - len(re.findall(r"\?\d+", sql))
    conn.execute("EXPLAIN " + sql, [None] * count).fetchall()


async def test_every_postgres_statement_prepares_on_a_migrated_database(pg_url: str) -> None:
    store = open_store(pg_url)
    await store.open()
    await store.close()
    conn = await asyncpg.connect(pg_url)
    try:
        q = queries("postgres")
        for name in sorted(q.names):
            if not q[name].lstrip().upper().startswith("CREATE"):
                await conn.prepare(q[name])  # parse, name resolution and parameter types
    finally:
        await conn.close()


def test_migrations_are_files_with_both_dialects() -> None:
    files = sorted(p.name for p in (ROOT / "gateway" / "store" / "migrations").glob("*.sql"))
    assert files and all(re.match(r"^\d{4}_\w+(\.(sqlite|postgres))?\.sql$", f) for f in files)
    assert [m.version for m in MIGRATIONS] == sorted({int(f[:4]) for f in files})


@pytest.mark.subprocess
def test_an_installed_wheel_finds_its_sql_files(tmp_path: Path) -> None:
    """Build the wheel from a copy of the tree, install it into a bare directory, and load every
    query and migration from there in a fresh interpreter run outside the checkout."""
    src = source_copy(tmp_path / "src")
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)], check=True)
    (wheel,) = wheels.glob("hitl_gateway-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True)
    probe = (
        "import gateway, gateway.store.sql as s, gateway.store.migrations as m;"
        "print(gateway.__file__);"
        "print(sum(len(s.queries(d).names) for d in s.DIALECTS), len(m.MIGRATIONS))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[0].startswith(str(target))  # the installed copy, not this checkout
    expected = sum(len(queries(d).names) for d in DIALECTS)
    assert out[1:] == [str(expected), str(len(MIGRATIONS))]
