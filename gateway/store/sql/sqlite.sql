-- What only the SQLite store runs (the rest is in queries.sql). One process writes the file,
-- through one writer (sqlite/engine.py): a claim is a SELECT then an UPDATE in the writer's
-- transaction, with no row locks to skip. SQLite below 3.35 has no RETURNING, so a statement
-- that reads what it wrote is followed by a SELECT. {ids}: a list of ? marks (sql.in_list).

-- name: claim_due
-- The columns in rows.APPROVAL_COLUMNS order: decoded by position (rows.approval_from_values),
-- 10^5 rows in a storm. ORDER BY wake_at alone: the index walk stops after the limit; with
-- ", id" SQLite sorts every row that shares a wake_at (a storm of equal deadlines: all of them,
-- per batch), which made a timeout storm quadratic. Ties come in rowid order.
SELECT id, idempotency_key, run_id, step, title, summary, args, state, channels, approvers, policy,
    worker, requested_by, status, version, created_at, deadline, wake_at, votes, decision,
    escalations, reminders_sent, args_hash, sealed, agent, terms, proposal, extensions, code_version,
    traceparent, tracestate
FROM approvals
WHERE wake_at IS NOT NULL AND wake_at <= $1 AND (wake_lease_until IS NULL OR wake_lease_until <= $2)
ORDER BY wake_at LIMIT $3;

-- name: lease_due
UPDATE approvals SET wake_owner = $1, wake_lease_until = $2 WHERE id IN ({ids});

-- name: claim_outbox
SELECT id FROM outbox
WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
    -- one owner at a time per card, so that its post, syncs and reminders stay in order
    AND NOT EXISTS (SELECT 1 FROM outbox busy WHERE busy.approval_id = outbox.approval_id
                    AND busy.channel = outbox.channel AND busy.lease_until > $1)
    -- an event waits until the one before it to the same webhook was acknowledged or given up
    AND (kind <> 'event' OR NOT EXISTS (SELECT 1 FROM outbox prior WHERE prior.approval_id = outbox.approval_id
         AND prior.channel = outbox.channel AND prior.status = 'pending' AND prior.id < outbox.id))
ORDER BY next_attempt_at, id LIMIT $2;

-- name: lease_outbox
UPDATE outbox SET lease_owner = $1, lease_until = $2 WHERE id IN ({ids});

-- name: claimed_outbox
SELECT * FROM outbox WHERE id IN ({ids}) ORDER BY id;

-- name: claim_jobs
SELECT id FROM resume_jobs
WHERE (status = 'queued' AND next_attempt_at <= $1) OR (status = 'running' AND lease_until <= $1)
ORDER BY next_attempt_at, id LIMIT $2;

-- name: lease_jobs
UPDATE resume_jobs SET status = 'running', claimed_by = $1, lease_until = $2, attempts = attempts + 1,
    claims = claims + 1, updated_at = $3
WHERE id IN ({ids});

-- name: claimed_jobs
SELECT * FROM resume_jobs WHERE id IN ({ids});

-- name: insert_queued
-- A delivery to queue, sent as multi-row inserts of this row (sqlite/writes.py). Coalescing
-- happens before, in Python: one pending, unclaimed sync per card is enough (pending_syncs).
-- OR IGNORE (a second post of a card): a fifth cheaper here than ON CONFLICT DO NOTHING.
INSERT OR IGNORE INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data, created_at, updated_at)
VALUES ($1, $2, $3, 'pending', 0, $4, $5, $6, $7);

-- name: pending_syncs
-- The cards of a run of queued rows that have a pending, unclaimed sync (index outbox_pending_sync).
SELECT approval_id, channel FROM outbox
WHERE kind = 'sync' AND status = 'pending' AND lease_owner IS NULL AND approval_id IN ({ids});

-- name: finish_outbox
-- Only the lease holder records a delivery result (the card's approval: then outbox_approval).
UPDATE outbox SET status = $1, attempts = attempts + $2, next_attempt_at = COALESCE($3, next_attempt_at),
    last_error = $4, lease_owner = NULL, lease_until = NULL, updated_at = $5
WHERE id = $6 AND lease_owner = $7;

-- name: record_step
-- The first record wins once it has succeeded; the caller reads the stored row back (get_step).
INSERT INTO journal (run_id, name, status, output, attempts, started_at, finished_at, error, namespace)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (run_id, namespace, name) DO UPDATE SET
    status = excluded.status, output = excluded.output, attempts = excluded.attempts,
    started_at = excluded.started_at, finished_at = excluded.finished_at, error = excluded.error
WHERE journal.status <> 'succeeded';

-- name: has_schema_migrations
SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations';

-------------------------------------------------------------------------- audit (migrations 13, 15)

-- name: audit_heads_in
-- The approvals' heads: each one's last event. One writer: nothing moves them while it extends
-- the chains (a legacy last event, seq NULL: no chain yet). $1: the ids as a JSON array, so that
-- one prepared statement serves every batch; each id is one seek to the end of its entries in
-- index events_approval (a MAX() subquery), where `IN (...) GROUP BY` scanned every entry and
-- built two temporary B-trees: a fifth cheaper per approval on a timeout storm.
SELECT e.approval_id, e.seq, e.hash FROM json_each($1) AS j
JOIN events AS e ON e.id = (SELECT MAX(id) FROM events WHERE approval_id = j.value);

-- name: audit_head_of
SELECT seq, hash FROM events WHERE approval_id = $1 ORDER BY id DESC LIMIT 1;

-- name: unsealed_heads
-- The heads that moved since the last checkpoint: each approval with a chained event after the
-- watermark, at its last such event (the bare columns of a MAX() aggregate come from the row
-- holding the maximum, SQLite's documented rule). The checkpoint's transaction then moves the
-- watermark (seal_heads): one writer, no event comes in between.
SELECT approval_id, MAX(seq) AS seq, hash FROM events
WHERE id > (SELECT events_upto FROM audit_seal) AND seq IS NOT NULL
GROUP BY approval_id ORDER BY approval_id;

-- name: seal_heads
UPDATE audit_seal SET events_upto = (SELECT COALESCE(MAX(id), events_upto) FROM events);

-- name: audit_approvals
-- The approvals an audit covers: those with an event in [$1, $2] and those a checkpoint in that
-- range sealed. A full check needs nothing more here (PostgreSQL adds its head rows): every
-- approval with an event is in the first part, and one whose events are all gone shows as a
-- hole in the event ids (missing_event).
SELECT approval_id FROM events WHERE at >= $1 AND at <= $2
UNION SELECT approval_id FROM audit_leaves
    WHERE checkpoint BETWEEN (SELECT MIN(seq) FROM audit_checkpoints WHERE at >= $1)
        AND (SELECT MAX(seq) FROM audit_checkpoints WHERE at <= $2)  -- as checkpoints_between
ORDER BY approval_id;

-- name: missing_event
-- Events are never deleted (the append-only triggers) and AUTOINCREMENT never reuses an id (a
-- rolled-back insert takes its id back with it), so from the first chained event up to the
-- counter in sqlite_sequence every id is there: the first one that is not is a deleted event,
-- the last ones included (a truncated tail leaves the counter above the highest id).
WITH bounds AS (
    SELECT (SELECT MIN(id) FROM events WHERE hash IS NOT NULL) AS low,
           (SELECT seq FROM sqlite_sequence WHERE name = 'events') AS high
)
SELECT MIN(missing) FROM (
    SELECT e.id + 1 AS missing FROM events e, bounds
    WHERE e.id >= bounds.low AND e.id < bounds.high
      AND NOT EXISTS (SELECT 1 FROM events n WHERE n.id = e.id + 1)
    UNION ALL
    SELECT bounds.high FROM bounds
    WHERE bounds.high IS NOT NULL AND bounds.low IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events WHERE id = bounds.high)
);

-- name: audit_events_in
SELECT id, approval_id, seq, kind, at, actor, channel, data, hash FROM events
WHERE approval_id IN ({ids}) ORDER BY approval_id, id;

-- name: audit_rows_in
-- What the audit compares of the approvals rows with their events (gateway/core/audit_rows.py).
SELECT id, status, decision, proposal, args_hash FROM approvals WHERE id IN ({ids});

-- name: claim_owners
-- Whoever holds a claim in the file (a starting process checks which of them are gone:
-- sqlite/serve_lock.py). The partial indexes of active rows keep each part small.
SELECT claimed_by AS owner FROM resume_jobs WHERE status IN ('queued', 'running') AND claimed_by IS NOT NULL
UNION SELECT lease_owner FROM outbox WHERE status = 'pending' AND lease_owner IS NOT NULL
UNION SELECT wake_owner FROM approvals WHERE wake_at IS NOT NULL AND wake_owner IS NOT NULL;

-- name: budget_lock
-- A suspend that reads a budget holds the writer already: one transaction at a time.
SELECT $1;

-- name: budget_count
-- rules' count(window): $1 the agent's namespace, $2 the window's start. What went ahead: approved,
-- or approved by its policy at the deadline (timed_out with an approve), which the agent acts on
-- just the same; decided since $2, however long ago it was asked for (index
-- approvals_budget_decided, migration 27: the expression is the index's).
SELECT COUNT(*) AS n FROM approvals WHERE namespace = $1 AND status IN ('approved', 'timed_out')
    AND json_extract(decision, '$.decided_at') >= $2
    AND (status = 'approved' OR json_extract(decision, '$.outcome') = 'approve');

-- name: budget_spent
-- rules' spent(field, window): $1 the namespace, $2 the field as a JSON path ('$.amount'), $3 the
-- window's start; what went ahead, as budget_count counts it. A value that is not a number
-- (missing, redacted) adds nothing, nor does one below zero: the agent writes the args of every
-- step, and a budget is a cap it must not raise (a -1000000 on a step a rule allows).
SELECT COALESCE(SUM(CASE WHEN json_type(args, $2) IN ('integer', 'real') AND json_extract(args, $2) > 0
                         THEN json_extract(args, $2) END), 0) AS n
FROM approvals WHERE namespace = $1 AND status IN ('approved', 'timed_out')
    AND json_extract(decision, '$.decided_at') >= $3
    AND (status = 'approved' OR json_extract(decision, '$.outcome') = 'approve');
