-- migration: initial schema
-- The tables. SQLite and PostgreSQL differ in types (REAL / DOUBLE PRECISION), ids
-- (AUTOINCREMENT / BIGSERIAL) and how the events table is made append-only (triggers).
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
