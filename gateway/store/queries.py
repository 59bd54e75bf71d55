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


# Run ownership (migration v11): the first agent to use a run id owns it; '' is a run from before.
CLAIM_RUN_SQL = "INSERT INTO runs (run_id, owner, created_at) VALUES ($1, $2, $3) ON CONFLICT (run_id) DO NOTHING"
RUN_OWNER_SQL = "SELECT owner FROM runs WHERE run_id = $1"


def claims_run(agent: str | None) -> bool:
    """Whether creating an approval by `agent` claims its run (agents do; operators and
    in-process callers do not)."""
    return agent is not None and agent.startswith("agent:")


# The resume jobs of one principal's approvals (appended to a WHERE by each backend).
JOBS_OF_AGENT = "approval_id IN (SELECT id FROM approvals WHERE agent = {mark})"

# Web sign-in sessions (migration v11); `id` is a hash of the cookie's session id.
CREATE_SESSION_SQL = "INSERT INTO web_sessions (id, user_name, created_at, expires_at) VALUES ($1, $2, $3, $4)"
SESSION_USER_SQL = "SELECT user_name FROM web_sessions WHERE id = $1 AND expires_at > $2"
DELETE_SESSION_SQL = "DELETE FROM web_sessions WHERE id = $1"
SESSION_USERS_SQL = "SELECT DISTINCT user_name FROM web_sessions"
DELETE_USER_SESSIONS_SQL = "DELETE FROM web_sessions WHERE user_name = $1"
PRUNE_SESSIONS_SQL = "DELETE FROM web_sessions WHERE expires_at <= $1"


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
    status: Status | None,
    run_id: str | None,
    channel: str | None,
    mark: Callable[[], str] = lambda: "?",
    agent: str | None = None,
) -> tuple[str, list[Any]]:
    """`SELECT * FROM approvals` with the inbox/API filters, in either placeholder style
    (`agent`: only the approvals that principal created)."""
    where, params = channel_filter(channel, mark)
    if status is not None:
        where.append(f"status = {mark()}")
        params.append(status.value)
    if run_id is not None:
        where.append(f"run_id = {mark()}")
        params.append(run_id)
    if agent is not None:
        where.append(f"agent = {mark()}")
        params.append(agent)
    sql = "SELECT * FROM approvals"
    return (sql + " WHERE " + " AND ".join(where) if where else sql), params
