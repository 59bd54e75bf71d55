"""SQLite store (the embedded default): engine.py is the writer engine (threads, group commit,
savepoints), store.py the backend of the shared use cases (gateway/store/shared/), writes.py
its Tx, claims.py its claims, serve_lock.py the proof that a claimer is gone, migrate.py the
migrations' transaction. The SQL itself is in gateway/store/sql/."""

from gateway.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
