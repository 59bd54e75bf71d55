"""SQLite store (the embedded default): engine.py is the writer engine (threads, group commit,
savepoints), store.py the backend of the shared use cases (gateway/store/shared/) and what
SQLite does its own way, claims.py and writes.py (its Tx) the SQLite-only parts of them,
migrate.py the migration runner. The SQL itself is in gateway/store/sql/."""

from gateway.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
