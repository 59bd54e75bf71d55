-- What only the PostgreSQL store runs (the rest is in queries.sql). Several replicas share the
-- database: a claim takes its rows with FOR UPDATE SKIP LOCKED (concurrent replicas skip each
-- other's rows instead of waiting), a batch goes as one statement over arrays (unnest), and a
-- statement that reads what it wrote uses RETURNING (one round trip).

-- name: claim_due
-- $1 now, $2 limit, $3 owner, $4 lease end. ORDER BY wake_at alone: the index walk stops at
-- the limit (", id" would sort every tie: a storm).
WITH due AS (
    SELECT id FROM approvals
    WHERE wake_at IS NOT NULL AND wake_at <= $1 AND (wake_lease_until IS NULL OR wake_lease_until <= $1)
    ORDER BY wake_at LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE approvals a SET wake_owner = $3, wake_lease_until = $4 FROM due WHERE a.id = due.id RETURNING a.*;

-- name: claim_outbox
WITH due AS (
    SELECT id FROM outbox
    WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
    -- one replica at a time per card, so that its post, syncs and reminders stay in order
    AND NOT EXISTS (SELECT 1 FROM outbox busy WHERE busy.approval_id = outbox.approval_id
                    AND busy.channel = outbox.channel AND busy.lease_until > $1)
    -- an event waits until the one before it to the same webhook was acknowledged or given up
    AND (kind <> 'event' OR NOT EXISTS (SELECT 1 FROM outbox prior WHERE prior.approval_id = outbox.approval_id
         AND prior.channel = outbox.channel AND prior.status = 'pending' AND prior.id < outbox.id))
    ORDER BY next_attempt_at, id LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox o SET lease_owner = $3, lease_until = $4 FROM due WHERE o.id = due.id RETURNING o.*;

-- name: claim_jobs
WITH due AS (
    SELECT id FROM resume_jobs
    WHERE (status = 'queued' AND next_attempt_at <= $1) OR (status = 'running' AND lease_until <= $1)
    ORDER BY next_attempt_at, id LIMIT $2
    FOR UPDATE SKIP LOCKED
)
UPDATE resume_jobs j SET status = 'running', claimed_by = $3, lease_until = $4, attempts = j.attempts + 1,
    claims = j.claims + 1, updated_at = $1
FROM due WHERE j.id = due.id RETURNING j.*;

-- name: save_policy_transitions
-- queries.sql's save_policy_transition for a whole batch in one statement: one array per
-- column of rows.POLICY_COLUMNS, then the ids and the expected versions; RETURNING names the
-- rows whose CAS matched.
UPDATE approvals a SET
    status = v.status, version = v.version, deadline = v.deadline, wake_at = v.wake_at,
    decision = v.decision, escalations = v.escalations, reminders_sent = v.reminders_sent,
    channels = v.channels, approvers = v.approvers, wake_owner = NULL, wake_lease_until = NULL
FROM unnest($1::text[], $2::int[], $3::float8[], $4::float8[], $5::text[], $6::int[], $7::int[],
            $8::text[], $9::text[], $10::text[], $11::int[])
    AS v(status, version, deadline, wake_at, decision, escalations, reminders_sent, channels, approvers, id, expected)
WHERE a.id = v.id AND a.version = v.expected
RETURNING a.id;

-- name: insert_queued
-- A delivery to queue (executemany). Coalesced in the statement: one pending, unclaimed sync
-- per card is enough, it renders the latest state (index outbox_pending_sync).
INSERT INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data, created_at, updated_at)
SELECT $1::text, $2::text, $3::text, 'pending', 0, $4::float8, $5::text, $6::float8, $7::float8
WHERE $3 <> 'sync' OR NOT EXISTS (SELECT 1 FROM outbox WHERE approval_id = $1 AND channel = $2
    AND kind = 'sync' AND status = 'pending' AND lease_owner IS NULL)
ON CONFLICT DO NOTHING;

-- name: finish_outbox
-- Only the lease holder records a delivery result; RETURNING names the card's approval.
UPDATE outbox SET status = $1, attempts = attempts + $2, next_attempt_at = COALESCE($3, next_attempt_at),
    last_error = $4, lease_owner = NULL, lease_until = NULL, updated_at = $5
WHERE id = $6 AND lease_owner = $7
RETURNING approval_id;

-- name: record_step
-- The first record wins once it has succeeded: then nothing is returned and the caller reads
-- the stored row (get_step).
INSERT INTO journal (run_id, name, status, output, attempts, started_at, finished_at, error, namespace)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (run_id, namespace, name) DO UPDATE SET
    status = excluded.status, output = excluded.output, attempts = excluded.attempts,
    started_at = excluded.started_at, finished_at = excluded.finished_at, error = excluded.error
WHERE journal.status <> 'succeeded'
RETURNING *;

-- name: notify
-- Wake-ups after a commit, one per channel (postgres/notify.py): $1 channels, $2 payloads.
SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p);

-- name: lock_migrations
-- Replicas starting at once queue here; the second finds nothing left to do.
SELECT pg_advisory_xact_lock($1);

-- name: has_schema_migrations
SELECT 1 WHERE to_regclass('schema_migrations') IS NOT NULL;

-------------------------------------------------------------------------- audit (migration 13)

-- name: lock_audit_heads
-- The chain heads of the approvals a transaction writes events for, locked in id order (no
-- deadlock between two writers of the same approvals) until it commits: a concurrent writer of
-- the same approval waits here, then reads the head this one wrote. Other approvals never wait.
SELECT approval_id, seq, hash FROM audit_heads WHERE approval_id = ANY($1::text[])
ORDER BY approval_id FOR UPDATE;

-- name: insert_chained_events
-- The events, in order, and their approvals' new heads: one statement, one round trip.
WITH inserted AS (
    INSERT INTO events (approval_id, kind, at, actor, channel, data, seq, hash)
    SELECT e.approval_id, e.kind, e.at, e.actor, e.channel, e.data, e.seq, e.hash
    FROM unnest($1::text[], $2::text[], $3::float8[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[])
        WITH ORDINALITY AS e(approval_id, kind, at, actor, channel, data, seq, hash, n)
    ORDER BY e.n
)
INSERT INTO audit_heads (approval_id, seq, hash)
SELECT * FROM unnest($9::text[], $10::int[], $11::text[])
ON CONFLICT (approval_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash;

-- name: seal_heads
-- The heads moved since the last checkpoint, now sealed; a head a writer holds right now is
-- skipped (sealed next time), so that sealing never waits for, or deadlocks with, a writer.
UPDATE audit_heads SET sealed_seq = seq WHERE approval_id IN (
    SELECT approval_id FROM audit_heads WHERE seq > sealed_seq FOR UPDATE SKIP LOCKED
) RETURNING approval_id, seq, hash;

-- name: lock_checkpoints
-- One sealer at a time across replicas (plain reads of the table do not wait).
LOCK TABLE audit_checkpoints IN EXCLUSIVE MODE;

-- name: audit_events_in
SELECT id, approval_id, seq, kind, at, actor, channel, data, hash FROM events
WHERE approval_id = ANY($1::text[]) ORDER BY approval_id, id;

-- name: audit_rows_in
-- What the audit compares of the approvals rows with their events (gateway/core/audit_rows.py).
SELECT id, status, decision, proposal, args_hash FROM approvals WHERE id = ANY($1::text[]);

-- name: audit_approvals
-- The approvals an audit covers: those with an event in [$1, $2], those a checkpoint in that
-- range sealed, and ($3 = 1, a full check) every approval with a head row.
SELECT approval_id FROM events WHERE at >= $1 AND at <= $2
UNION SELECT approval_id FROM audit_leaves
    WHERE checkpoint BETWEEN (SELECT MIN(seq) FROM audit_checkpoints WHERE at >= $1)
        AND (SELECT MAX(seq) FROM audit_checkpoints WHERE at <= $2)  -- as checkpoints_between
UNION SELECT approval_id FROM audit_heads WHERE $3 = 1
ORDER BY approval_id;

-- name: audit_heads_in
SELECT approval_id, seq, hash FROM audit_heads WHERE approval_id = ANY($1::text[]);

-- name: lock_replica
-- Liveness that PostgreSQL proves (postgres/liveness.py): a session lock, gone with the
-- connection. $1 the class (a constant), $2 this process's random key.
SELECT pg_try_advisory_lock($1, $2);

-- name: register_replica
-- In database time: every replica compares seen_at with the same clock.
INSERT INTO replicas (owner, lock_key, started_at, seen_at)
VALUES ($1, $2, extract(epoch FROM clock_timestamp()), extract(epoch FROM clock_timestamp()))
ON CONFLICT (owner) DO UPDATE SET lock_key = excluded.lock_key, seen_at = excluded.seen_at;

-- name: replica_heartbeat
-- 0 rows: another replica found this one gone meanwhile (its connection was lost) and
-- released its claims; it registers again. Else how many other replicas renewed within $3
-- seconds: with none, nobody needs this one's wake-up NOTIFYs (notify.py).
UPDATE replicas SET seen_at = extract(epoch FROM clock_timestamp()) WHERE owner = $1 AND lock_key = $2
RETURNING (SELECT count(*) FROM replicas o
           WHERE o.owner <> $1 AND o.seen_at >= extract(epoch FROM clock_timestamp()) - $3);

-- name: gone_replicas
-- Replicas that are gone: their advisory lock is free (the connection that held it closed: a
-- kill, a crash, a lost node once TCP keepalives give up) AND they have not renewed seen_at for
-- $2 seconds. Both, so that neither a stalled process (it keeps its connection, hence its lock)
-- nor a connection lost by a live one (it keeps renewing) is taken for dead. Deleted here: of
-- two replicas reaping at once, one gets each. $1 this replica, $3 the lock class.
DELETE FROM replicas r
WHERE r.owner <> $1
    AND r.seen_at < extract(epoch FROM clock_timestamp()) - $2
    AND NOT EXISTS (
        SELECT 1 FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND l.classid::bigint = $3 AND l.objid::bigint = r.lock_key
    )
RETURNING r.owner;

-- name: hand_back_jobs
-- A stopping replica's running jobs back in the queue ($1 owner, $2 now), like release_jobs but
-- skipping a row another transaction holds: the replica never waits on a lock at exit. What it
-- could not hand back stays claimed, and the replica stays registered (hand_back_left), so that
-- the others take it over once the process is gone (liveness.py), not after store.lease.
UPDATE resume_jobs SET status = 'queued', claimed_by = NULL, lease_until = NULL, updated_at = $2
WHERE id IN (SELECT id FROM resume_jobs WHERE status = 'running' AND claimed_by = $1 FOR UPDATE SKIP LOCKED);

-- name: hand_back_outbox
UPDATE outbox SET lease_owner = NULL, lease_until = NULL
WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' AND lease_owner = $1 FOR UPDATE SKIP LOCKED);

-- name: hand_back_wakes
UPDATE approvals SET wake_owner = NULL, wake_lease_until = NULL
WHERE id IN (SELECT id FROM approvals WHERE wake_at IS NOT NULL AND wake_owner = $1 FOR UPDATE SKIP LOCKED);

-- name: hand_back_left
-- Does $1 still hold a claim (one the hand-back skipped)?
SELECT EXISTS (SELECT 1 FROM resume_jobs WHERE status = 'running' AND claimed_by = $1)
    OR EXISTS (SELECT 1 FROM outbox WHERE status = 'pending' AND lease_owner = $1)
    OR EXISTS (SELECT 1 FROM approvals WHERE wake_at IS NOT NULL AND wake_owner = $1);

-- name: unregister_replica
DELETE FROM replicas WHERE owner = $1 AND lock_key = $2;

-- name: budget_lock
-- Suspends of one agent that read a budget, one at a time across replicas, until the commit.
SELECT pg_advisory_xact_lock(hashtextextended('hitl budget ' || $1, 0));

-- name: budget_count
-- rules' count(window): $1 the agent's namespace, $2 the window's start. What went ahead: approved,
-- or approved by its policy at the deadline (timed_out with an approve), which the agent acts on
-- just the same; decided since $2, however long ago it was asked for (index
-- approvals_budget_decided, migration 27: the expression is the index's).
SELECT COUNT(*) AS n FROM approvals WHERE namespace = $1 AND status IN ('approved', 'timed_out')
    AND ((decision::jsonb ->> 'decided_at')::double precision) >= $2
    AND (status = 'approved' OR decision::jsonb ->> 'outcome' = 'approve');

-- name: budget_spent
-- rules' spent(field, window): $1 the namespace, $2 the field's path as a text array, $3 the
-- window's start; what went ahead, as budget_count counts it. A value that is not a number
-- (missing, redacted) adds nothing, nor does one below zero: the agent writes the args of every
-- step, and a budget is a cap it must not raise (a -1000000 on a step a rule allows).
SELECT COALESCE(SUM(CASE WHEN jsonb_typeof(args::jsonb #> $2::text[]) = 'number'
                         THEN GREATEST((args::jsonb #>> $2::text[])::numeric, 0) END), 0) AS n
FROM approvals WHERE namespace = $1 AND status IN ('approved', 'timed_out')
    AND ((decision::jsonb ->> 'decided_at')::double precision) >= $3
    AND (status = 'approved' OR decision::jsonb ->> 'outcome' = 'approve');
