"""Storage: the `Store` protocol and `open_store(url)`, which picks a backend by URL scheme.

base.py is the protocol (its ports), shared/ the use cases written once, rows.py the row
codecs, sql/ every statement by name, migrations/ the schema versions, sqlite/ and postgres/
the two backends. The Postgres backend (and asyncpg) is
imported only when a postgresql:// URL asks for it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.store.base import (
    ApprovalSnapshot,
    Build,
    CardUpdate,
    Creation,
    DelegationUnavailable,
    GrantUnavailable,
    NewJob,
    OutboxResult,
    Prompt,
    RuleTrace,
    SeenBefore,
    Store,
    TransitionWrite,
    ViewOf,
    WebSession,
)

__all__ = [
    "ApprovalSnapshot",
    "Build",
    "CardUpdate",
    "Creation",
    "DelegationUnavailable",
    "GrantUnavailable",
    "NewJob",
    "OutboxResult",
    "Prompt",
    "RuleTrace",
    "SeenBefore",
    "Store",
    "TransitionWrite",
    "ViewOf",
    "WebSession",
    "open_store",
    "sqlite_path",
]


def sqlite_path(url: str) -> str:
    """sqlite:///relative/path.db, sqlite:////absolute/path.db, or sqlite:///:memory:."""
    if not url.startswith("sqlite:///"):
        raise ConfigError("store.url", f"not a sqlite URL: {url.split('://')[0]}://...")
    return url[len("sqlite:///") :]


def open_store(url: str) -> Store:
    """Build (not yet open) the store for `url`. Call `await store.open()` next."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        from gateway.store.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url))
    if scheme in ("postgresql", "postgres"):
        try:
            from gateway.store.postgres import PostgresStore  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError("store.url", f"PostgreSQL needs the 'postgres' extra ({exc})") from None
        store: Store = PostgresStore(url)
        return store
    raise ConfigError("store.url", f"unsupported scheme {scheme!r}")
