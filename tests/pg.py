"""Throwaway PostgreSQL databases for tests (not fixtures; see tests/conftest.py).

HITL_TEST_POSTGRES_URL names a server and a database we may connect to (default: the local
trust-auth server). Each test session creates its own database there and drops it at the end.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"


def server_url() -> str:
    return os.environ.get("HITL_TEST_POSTGRES_URL") or DEFAULT_URL


def with_database(url: str, database: str, query: str = "") -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", query, ""))


def unavailable(reason: str) -> None:
    """Skip, except in CI where a missing PostgreSQL must fail the run."""
    where = urlsplit(server_url())
    message = f"PostgreSQL unreachable at {where.hostname}:{where.port or 5432} ({reason}); set HITL_TEST_POSTGRES_URL"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " -- CI=true requires PostgreSQL", pytrace=False)
    pytest.skip(message)


async def create_database(prefix: str = "hitl_test") -> str:
    """CREATE DATABASE <prefix>_<random> on the test server; returns its URL."""
    name = f"{prefix}_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(server_url(), timeout=5)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return with_database(server_url(), name)


async def drop_database(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    conn = await asyncpg.connect(server_url(), timeout=5)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def create_schema(database_url: str) -> str:
    """A fresh schema in the session database: a clean store for one test, at low cost."""
    schema = f"t_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(database_url, timeout=5)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await conn.close()
    return f"{database_url}?search_path={schema}"


def create_session_database() -> str:
    """Synchronous wrapper for the session fixture (it runs outside any event loop)."""
    try:
        return asyncio.run(create_database())
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        unavailable(f"{type(exc).__name__}: {exc}")
        raise  # unreachable: unavailable() skips or fails


def drop_session_database(url: str) -> None:
    asyncio.run(drop_database(url))
