"""SQLite store (the embedded default): engine.py is the writer engine (threads, group commit,
savepoints), store.py the use cases, claims.py and writes.py the SQLite-only parts of them,
migrate.py the migration runner. The SQL itself is in gateway/store/sql/."""

from gateway.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
