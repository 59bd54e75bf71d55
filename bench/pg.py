"""A throwaway PostgreSQL database for the benchmarks, when a server is reachable."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

PG_URL = os.environ.get("HITL_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/test"


def reachable() -> str | None:
    """None when a Postgres server answers on PG_URL with asyncpg installed, else why not."""
    try:
        import asyncpg
    except ImportError:
        return "asyncpg is not installed"

    async def probe() -> None:
        conn = await asyncpg.connect(PG_URL, timeout=3)
        await conn.close()

    try:
        asyncio.run(probe())
    except Exception as exc:
        return f"no PostgreSQL at {urlsplit(PG_URL).hostname}:{urlsplit(PG_URL).port} ({type(exc).__name__})"
    return None


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextmanager
def database(prefix: str = "hitl_bench") -> Iterator[str]:
    """CREATE a fresh database on PG_URL's server, yield its URL, DROP it afterwards."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    try:
        parts = urlsplit(PG_URL)
        yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
