-- migration: namespaces: run ids and idempotency keys per agent
-- Run ids and idempotency keys are unique per agent, not globally: another agent's id or key is
-- simply its own, so that neither reveals (by a 404 or a 409) that the first exists, nor can be
-- taken first to make the other's suspends fail. `namespace` is the creating agent's identity
-- ('agent:NAME'), or '' for no agent: operators, in-process callers, and what an agent did not
-- create before principals existed (migration 11). A journal row takes the namespace of its
-- run's owner (`runs`, which the namespace replaces).
-- SQLite cannot drop a column's UNIQUE, nor change a primary key: `approvals` and `journal` are
-- rebuilt (same columns, plus `namespace`) and their indexes made again.
CREATE TABLE approvals_ns (
    id              TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL,
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
    args_hash       TEXT NOT NULL,
    sealed          TEXT,
    wake_owner      TEXT,
    wake_lease_until REAL,
    agent           TEXT,
    terms           TEXT,
    proposal        TEXT,
    extensions      INTEGER NOT NULL DEFAULT 0,
    code_version    TEXT,
    namespace       TEXT NOT NULL DEFAULT ''
);
INSERT INTO approvals_ns (
    id, idempotency_key, run_id, step, title, summary, args, state, channels, approvers, policy,
    worker, requested_by, status, version, created_at, deadline, wake_at, votes, decision,
    escalations, reminders_sent, args_hash, sealed, wake_owner, wake_lease_until, agent, terms,
    proposal, extensions, code_version, namespace
)
SELECT
    id, idempotency_key, run_id, step, title, summary, args, state, channels, approvers, policy,
    worker, requested_by, status, version, created_at, deadline, wake_at, votes, decision,
    escalations, reminders_sent, args_hash, sealed, wake_owner, wake_lease_until, agent, terms,
    proposal, extensions, code_version, CASE WHEN agent LIKE 'agent:%' THEN agent ELSE '' END
FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_ns RENAME TO approvals;
CREATE INDEX approvals_wake ON approvals (wake_at) WHERE wake_at IS NOT NULL;
CREATE INDEX approvals_run ON approvals (run_id);
CREATE INDEX approvals_status_created ON approvals (status, created_at);
CREATE INDEX approvals_agent ON approvals (agent, created_at);
CREATE UNIQUE INDEX approvals_key ON approvals (namespace, idempotency_key);
CREATE TABLE journal_ns (
    run_id      TEXT NOT NULL,
    name        TEXT NOT NULL,
    status      TEXT NOT NULL,
    output      TEXT,
    attempts    INTEGER NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL NOT NULL,
    error       TEXT,
    namespace   TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, namespace, name)
);
INSERT INTO journal_ns (run_id, name, status, output, attempts, started_at, finished_at, error, namespace)
SELECT j.run_id, j.name, j.status, j.output, j.attempts, j.started_at, j.finished_at, j.error,
    COALESCE((SELECT r.owner FROM runs r WHERE r.run_id = j.run_id), '')
FROM journal j;
DROP TABLE journal;
ALTER TABLE journal_ns RENAME TO journal;
DROP TABLE runs;
