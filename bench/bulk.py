"""Bulk-load pending approvals straight through the row codec and SQL (fast, same bytes on disk).

Each pending approval gets what the real suspend path leaves once its card is delivered: the
approval row, its `suspended` and `card_posted` events (chained, as the store links them: a storm
then reads and extends real heads), its done POST outbox row and its card.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gateway.core.audit import GENESIS, event_tail, link_hash
from gateway.core.keys import args_hash, canonical_json, idempotency_key
from gateway.core.models import Approval, Policy
from gateway.store.rows import APPROVAL_COLUMNS, approval_values
from gateway.store.sqlite import SQLiteStore
from gateway.testing import make_approval

_INSERT = f"INSERT INTO approvals ({', '.join(APPROVAL_COLUMNS)}) VALUES ({', '.join('?' * len(APPROVAL_COLUMNS))})"
_CHUNK = 20_000


def migrate(db: Path) -> None:
    async def go() -> None:
        store = SQLiteStore(str(db))
        await store.open()
        await store.close()

    asyncio.run(go())


def template(worker: str | None = None, created: datetime | None = None, timeout_s: float = 1800) -> Approval:
    """A typical approval as /v1/suspend would store it (the bench's load body)."""
    args = {"amount": 4200, "currency": "USD", "customer": "cus_123"}
    return make_approval(
        Policy(timeout=timedelta(seconds=timeout_s)),
        created or datetime.now(UTC),
        step="charge",
        title="Charge ACME $42",
        summary="Monthly invoice for ACME Corp, plan Pro, 3 seats",
        args=args,
        state={"cursor": 3, "messages": ["draft invoice", "ask approval"]},
        worker=worker,
        args_hash=args_hash(args),
    )


def insert_pending(db: Path, count: int, tpl: Approval | None = None, prefix: str = "bulk") -> float:
    """Insert `count` pending approvals (plus events, outbox row and card); return seconds taken."""
    base = tpl or template()
    values = list(approval_values(base))
    ts = base.created_at.timestamp()
    created = APPROVAL_COLUMNS.index("created_at")
    ev_suspended = canonical_json({"channels": ["web"], "policy": base.policy.name, "run_id": "x", "step": "charge"})
    t0 = time.perf_counter()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # bulk load only; the gateway itself runs FULL
    try:
        for start in range(0, count, _CHUNK):
            rows, events, outbox, cards = [], [], [], []
            for n in range(start, min(count, start + _CHUNK)):
                aid = f"{prefix}{n:011d}"[-16:].rjust(16, "a")
                run = f"{prefix}-run-{n}"
                v = values.copy()
                v[0], v[1], v[2] = aid, idempotency_key(run, base.step, base.args), run
                v[created] = ts - (count - n) * 0.001  # distinct, as real ones are (index order)
                rows.append(v)
                prev = GENESIS
                for seq, (kind, channel, data) in enumerate(
                    (
                        ("suspended", None, ev_suspended.replace('"x"', f'"{run}"')),
                        ("card_posted", "web", f'{{"ref":"/approvals/{aid}"}}'),
                    ),
                    start=1,
                ):
                    prev = link_hash(prev, seq, event_tail(aid, kind, None, ts, channel, data))
                    events.append((aid, kind, ts, None, channel, data, seq, prev))
                outbox.append((aid, "web", "post", "done", 1, ts, "{}", ts, ts))
                cards.append((aid, "web", f"/approvals/{aid}", "done", None, ts, ts))
            conn.execute("BEGIN")
            conn.executemany(_INSERT, rows)
            conn.executemany(
                "INSERT INTO events (approval_id, kind, at, actor, channel, data, seq, hash)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                events,
            )
            conn.executemany(
                "INSERT INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                outbox,
            )
            conn.executemany(
                "INSERT INTO cards (approval_id, channel, ref, status, error, posted_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                cards,
            )
            conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return time.perf_counter() - t0


def due_template(worker: str, now: datetime) -> Approval:
    """An approval whose deadline is `now` (a timeout storm)."""
    tpl = template(worker=worker, created=now - timedelta(minutes=1), timeout_s=60)
    return replace(tpl, deadline=now, wake_at=now)


def bytes_per_approval(db: Path) -> dict[str, Any]:
    """Live pages (page_count - freelist) * page_size over the number of approvals, and per table."""
    conn = sqlite3.connect(db)
    try:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        count = conn.execute("SELECT COUNT(*) FROM approvals").fetchone()[0]
        per_table: dict[str, int] = {}
        try:
            for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
                per_table[name] = int(size)
        except sqlite3.OperationalError:  # dbstat not compiled in
            pass
    finally:
        conn.close()
    live = (pages - free) * page
    return {
        "approvals": count,
        "bytes": live,
        "bytes_per_approval": round(live / count, 1) if count else 0.0,
        "per_object_bytes": {k: round(v / count, 1) for k, v in sorted(per_table.items())} if count else {},
    }
