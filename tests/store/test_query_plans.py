"""Hot queries must walk an index and stop at their LIMIT, whatever the backlog.

Structural checks with EXPLAIN QUERY PLAN (no timing): a plan that sorts every candidate row
turns a storm of equal deadlines quadratic (10^5 due at once took 34 s instead of a few)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.store.sql import queries
from gateway.store.sqlite import SQLiteStore

_CLAIM_DUE = queries("sqlite").claim_due


async def _plan(path: Path, sql: str, params: tuple[object, ...]) -> str:
    store = SQLiteStore(str(path))
    await store.open()
    await store.close()
    conn = sqlite3.connect(path)
    try:
        return " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    finally:
        conn.close()


async def test_the_due_claim_walks_the_wake_index_without_sorting(tmp_path: Path) -> None:
    plan = await _plan(tmp_path / "plan.db", _CLAIM_DUE, (1.0, 1.0, 500))
    assert "approvals_wake" in plan
    assert "TEMP B-TREE" not in plan  # no sort of all the due rows (ties included) per batch


async def test_the_dashboard_finds_cards_needing_attention_by_index(tmp_path: Path) -> None:
    plan = await _plan(tmp_path / "plan.db", queries("sqlite").cards_needing_attention, (50,))
    assert "cards_attention" in plan and "TEMP B-TREE" not in plan  # not a scan of every card


async def test_sync_coalescing_looks_the_pending_sync_up_by_index(tmp_path: Path) -> None:
    sql = (
        "SELECT 1 FROM outbox WHERE approval_id = ? AND channel = ? AND kind = 'sync' AND status = 'pending'"
        " AND lease_owner IS NULL"
    )
    assert "outbox_pending_sync" in await _plan(tmp_path / "plan.db", sql, ("a", "web"))
