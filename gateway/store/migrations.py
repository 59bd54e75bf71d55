"""One versioned list of migrations; each entry carries the SQL for every dialect.

Append only: never edit a released migration, add the next version instead.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sqlite: str
    postgres: str


_V1_SQLITE = """
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    run_id          TEXT NOT NULL,
    step            TEXT NOT NULL,
    title           TEXT NOT NULL,
    summary         TEXT NOT NULL,
    args            TEXT NOT NULL,
    state           TEXT NOT NULL,
    channels        TEXT NOT NULL,
    approvers       TEXT NOT NULL,
    policy          TEXT NOT NULL,
    worker          TEXT,
    requested_by    TEXT,
    status          TEXT NOT NULL,
    version         INTEGER NOT NULL,
    created_at      REAL NOT NULL,
    deadline        REAL,
    wake_at         REAL,
    votes           TEXT NOT NULL,
    decision        TEXT,
    escalations     INTEGER NOT NULL DEFAULT 0,
    reminders_sent  INTEGER NOT NULL DEFAULT 0,
    args_hash       TEXT NOT NULL
);
CREATE INDEX approvals_wake ON approvals (wake_at) WHERE wake_at IS NOT NULL;
CREATE INDEX approvals_run ON approvals (run_id);
CREATE INDEX approvals_status_created ON approvals (status, created_at);

CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    approval_id TEXT NOT NULL,
    kind        TEXT NOT NULL,
    at          REAL NOT NULL,
    actor       TEXT,
    channel     TEXT,
    data        TEXT NOT NULL
);
CREATE INDEX events_approval ON events (approval_id, id);
CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    approval_id     TEXT NOT NULL,
    channel         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    lease_owner     TEXT,
    lease_until     REAL,
    last_error      TEXT,
    data            TEXT NOT NULL DEFAULT '{}',
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_approval ON outbox (approval_id);
CREATE UNIQUE INDEX outbox_one_post ON outbox (approval_id, channel) WHERE kind = 'post';

CREATE TABLE cards (
    approval_id TEXT NOT NULL,
    channel     TEXT NOT NULL,
    ref         TEXT,
    status      TEXT NOT NULL,
    error       TEXT,
    posted_at   REAL,
    updated_at  REAL,
    PRIMARY KEY (approval_id, channel)
);

CREATE TABLE resume_jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    approval_id     TEXT NOT NULL UNIQUE,
    worker          TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    claimed_by      TEXT,
    lease_until     REAL,
    last_error      TEXT,
    output_tail     TEXT,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL
);
CREATE INDEX resume_jobs_due ON resume_jobs (next_attempt_at) WHERE status IN ('queued', 'running');

CREATE TABLE journal (
    run_id      TEXT NOT NULL,
    name        TEXT NOT NULL,
    status      TEXT NOT NULL,
    output      TEXT,
    attempts    INTEGER NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL NOT NULL,
    error       TEXT,
    PRIMARY KEY (run_id, name)
);

CREATE TABLE inbound (
    key TEXT PRIMARY KEY,
    at  REAL NOT NULL
);
"""

_V1_POSTGRES = """
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    run_id          TEXT NOT NULL,
    step            TEXT NOT NULL,
    title           TEXT NOT NULL,
    summary         TEXT NOT NULL,
    args            TEXT NOT NULL,
    state           TEXT NOT NULL,
    channels        TEXT NOT NULL,
    approvers       TEXT NOT NULL,
    policy          TEXT NOT NULL,
    worker          TEXT,
    requested_by    TEXT,
    status          TEXT NOT NULL,
    version         INTEGER NOT NULL,
    created_at      DOUBLE PRECISION NOT NULL,
    deadline        DOUBLE PRECISION,
    wake_at         DOUBLE PRECISION,
    votes           TEXT NOT NULL,
    decision        TEXT,
    escalations     INTEGER NOT NULL DEFAULT 0,
    reminders_sent  INTEGER NOT NULL DEFAULT 0,
    args_hash       TEXT NOT NULL
);
CREATE INDEX approvals_wake ON approvals (wake_at) WHERE wake_at IS NOT NULL;
CREATE INDEX approvals_run ON approvals (run_id);
CREATE INDEX approvals_status_created ON approvals (status, created_at);

CREATE TABLE events (
    id          BIGSERIAL PRIMARY KEY,
    approval_id TEXT NOT NULL,
    kind        TEXT NOT NULL,
    at          DOUBLE PRECISION NOT NULL,
    actor       TEXT,
    channel     TEXT,
    data        TEXT NOT NULL
);
CREATE INDEX events_approval ON events (approval_id, id);
CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN RAISE EXCEPTION 'events are append-only'; END; $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
FOR EACH ROW EXECUTE FUNCTION events_append_only();

CREATE TABLE outbox (
    id              BIGSERIAL PRIMARY KEY,
    approval_id     TEXT NOT NULL,
    channel         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    lease_owner     TEXT,
    lease_until     DOUBLE PRECISION,
    last_error      TEXT,
    data            TEXT NOT NULL DEFAULT '{}',
    created_at      DOUBLE PRECISION NOT NULL,
    updated_at      DOUBLE PRECISION NOT NULL
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_approval ON outbox (approval_id);
CREATE UNIQUE INDEX outbox_one_post ON outbox (approval_id, channel) WHERE kind = 'post';

CREATE TABLE cards (
    approval_id TEXT NOT NULL,
    channel     TEXT NOT NULL,
    ref         TEXT,
    status      TEXT NOT NULL,
    error       TEXT,
    posted_at   DOUBLE PRECISION,
    updated_at  DOUBLE PRECISION,
    PRIMARY KEY (approval_id, channel)
);

CREATE TABLE resume_jobs (
    id              BIGSERIAL PRIMARY KEY,
    approval_id     TEXT NOT NULL UNIQUE,
    worker          TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DOUBLE PRECISION NOT NULL,
    claimed_by      TEXT,
    lease_until     DOUBLE PRECISION,
    last_error      TEXT,
    output_tail     TEXT,
    created_at      DOUBLE PRECISION NOT NULL,
    updated_at      DOUBLE PRECISION NOT NULL
);
CREATE INDEX resume_jobs_due ON resume_jobs (next_attempt_at) WHERE status IN ('queued', 'running');

CREATE TABLE journal (
    run_id      TEXT NOT NULL,
    name        TEXT NOT NULL,
    status      TEXT NOT NULL,
    output      TEXT,
    attempts    INTEGER NOT NULL,
    started_at  DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION NOT NULL,
    error       TEXT,
    PRIMARY KEY (run_id, name)
);

CREATE TABLE inbound (
    key TEXT PRIMARY KEY,
    at  DOUBLE PRECISION NOT NULL
);
"""

# v2: pending "why?" prompts, e.g. the reason asked for after a Reject press in a chat.
# `key` names the prompt on its channel ("<kind>:<chat_id>:<prompt_message_id>").
_V2_SQLITE = """
CREATE TABLE prompts (
    key         TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL,
    actor       TEXT NOT NULL,
    purpose     TEXT NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX prompts_expires ON prompts (expires_at);
"""

_V2_POSTGRES = """
CREATE TABLE prompts (
    key         TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL,
    actor       TEXT NOT NULL,
    purpose     TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX prompts_expires ON prompts (expires_at);
"""

# v7 (issue 7, several replicas): a lease on an approval's wake-up, so that one replica's
# scheduler applies each due deadline or reminder (Store.claim_due); save_transition clears it.
_V7_SQLITE = """
ALTER TABLE approvals ADD COLUMN wake_owner TEXT;
ALTER TABLE approvals ADD COLUMN wake_lease_until REAL;
"""
_V7_POSTGRES = """
ALTER TABLE approvals ADD COLUMN wake_owner TEXT, ADD COLUMN wake_lease_until DOUBLE PRECISION;
"""

# v5 (worker): args and summary are stored redacted for display; the raw args and state are
# sealed (encrypted) in `sealed` for rehydration only.
_V5 = "ALTER TABLE approvals ADD COLUMN sealed TEXT;"

# v8: the pending, unclaimed SYNC of a card, looked up by every queued sync (coalescing). Without
# it Postgres scanned every pending outbox row per insert: a timeout storm of 10^4 spent 4.2 s
# there, and 2x10^4 took 3.6x as long.
_V8 = """
CREATE INDEX outbox_pending_sync ON outbox (approval_id, channel)
    WHERE kind = 'sync' AND status = 'pending' AND lease_owner IS NULL;
"""

# v9: the cards an operator must look at (a post failed for good, or its outcome is unknown), for
# the dashboard, without scanning every card.
_V9 = """
CREATE INDEX cards_attention ON cards (updated_at) WHERE status IN ('failed', 'uncertain');
"""

# v10: inbound de-duplication marks are pruned by age (gateway/housekeeping.py).
_V10 = "CREATE INDEX inbound_at ON inbound (at);"

# v11 (issue 13, principals): the principal that created each approval (`agent`, NULL before:
# only operators see those); who owns each run id (`runs`: the first agent to use it; '' for runs
# that existed before, which no agent owns); and web sign-in sessions kept on the server, so that
# logout and removing a user from the config end them (`id` is a hash of the cookie's session id).
_V11_TEMPLATE = """
ALTER TABLE approvals ADD COLUMN agent TEXT;
CREATE INDEX approvals_agent ON approvals (agent, created_at);
CREATE TABLE runs (
    run_id     TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    created_at {real} NOT NULL
){without_rowid};
INSERT INTO runs (run_id, owner, created_at)
SELECT run_id, '', MIN(at) FROM (
    SELECT run_id, created_at AS at FROM approvals UNION ALL SELECT run_id, started_at AS at FROM journal
) known GROUP BY run_id;
CREATE TABLE web_sessions (
    id         TEXT PRIMARY KEY,
    user_name  TEXT NOT NULL,
    created_at {real} NOT NULL,
    expires_at {real} NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_name);
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
"""
# SQLite: WITHOUT ROWID keeps `runs` in its primary-key B-tree alone (one insert per claim, not two).
_V11_SQLITE = _V11_TEMPLATE.format(real="REAL", without_rowid=" WITHOUT ROWID")
_V11_POSTGRES = _V11_TEMPLATE.format(real="DOUBLE PRECISION", without_rowid="")

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _V1_SQLITE, _V1_POSTGRES),
    Migration(2, "pending prompts (reject reasons asked in a chat)", _V2_SQLITE, _V2_POSTGRES),
    Migration(5, "approvals.sealed: encrypted raw args and state", _V5, _V5),
    Migration(7, "wake-up leases for several replicas", _V7_SQLITE, _V7_POSTGRES),
    Migration(8, "index for coalescing a card's pending sync", _V8, _V8),
    Migration(9, "index of the cards that need an operator", _V9, _V9),
    Migration(10, "index for pruning inbound de-duplication marks", _V10, _V10),
    Migration(11, "principals: approvals.agent, run owners, web sessions", _V11_SQLITE, _V11_POSTGRES),
)

LATEST = MIGRATIONS[-1].version
