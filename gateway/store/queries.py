"""SQL shared by every backend for the read-only views (web inbox, dashboard, /metrics).

Placeholders are written `$1` (Postgres); the SQLite store replaces them with `?`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from gateway.core.models import Status

STEP_STATS_SQL = """
SELECT name,
       COUNT(*) AS runs,
       SUM(attempts) AS attempts,
       SUM(CASE WHEN attempts > 1 THEN attempts - 1 ELSE 0 END) AS retries,
       SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failures,
       AVG(finished_at - started_at) AS mean_seconds,
       SUM(finished_at - started_at) AS total_seconds
FROM journal
WHERE status <> 'suspended'
GROUP BY name
ORDER BY retries DESC, name
LIMIT $1
"""


# A card found by a press on it (its post had no recorded answer): recorded unless one already is.
ADOPT_CARD_SQL = """
INSERT INTO cards (approval_id, channel, ref, status, error, posted_at, updated_at)
VALUES ($1, $2, $3, 'done', NULL, $4, $5)
ON CONFLICT (approval_id, channel) DO UPDATE SET
    ref = excluded.ref, status = 'done', error = NULL,
    posted_at = COALESCE(cards.posted_at, excluded.posted_at), updated_at = excluded.updated_at
WHERE cards.ref IS NULL
"""


# An operator's "post it again": the card's one post row goes back to pending.
REQUEUE_POST_SQL = """
UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $1, updated_at = $1,
    last_error = NULL, lease_owner = NULL, lease_until = NULL
WHERE approval_id = $2 AND channel = $3 AND kind = 'post' AND status IN ('failed', 'uncertain')
"""


# Cards an operator must look at, newest first (the dashboard); partial index cards_attention.
ATTENTION_CARDS_SQL = """
SELECT * FROM cards WHERE status IN ('failed', 'uncertain') ORDER BY updated_at DESC LIMIT $1
"""


def qmarks(sql: str) -> str:
    """A shared query in SQLite's placeholder style: `$1`, `$2`... become `?` (in order)."""
    return re.sub(r"\$\d+", "?", sql)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def channel_filter(channel: str | None, mark: Callable[[], str] = lambda: "?") -> tuple[list[str], list[Any]]:
    """WHERE clauses matching approvals whose `channels` JSON list holds the address `channel`,
    or any address of that kind when `channel` has no target (a kind alone). `mark()` returns the
    next placeholder (Postgres: a counter giving $1, $2, ...)."""
    if not channel:
        return [], []
    exact = '%"' + _like_escape(channel) + '"%'
    if ":" in channel:
        return [f"channels LIKE {mark()} ESCAPE '\\'"], [exact]
    kind = '%"' + _like_escape(channel) + ":%"
    first, second = mark(), mark()
    return [f"(channels LIKE {first} ESCAPE '\\' OR channels LIKE {second} ESCAPE '\\')"], [exact, kind]


def approvals_sql(
    status: Status | None, run_id: str | None, channel: str | None, mark: Callable[[], str] = lambda: "?"
) -> tuple[str, list[Any]]:
    """`SELECT * FROM approvals` with the inbox/API filters, in either placeholder style."""
    where, params = channel_filter(channel, mark)
    if status is not None:
        where.append(f"status = {mark()}")
        params.append(status.value)
    if run_id is not None:
        where.append(f"run_id = {mark()}")
        params.append(run_id)
    sql = "SELECT * FROM approvals"
    return (sql + " WHERE " + " AND ".join(where) if where else sql), params
