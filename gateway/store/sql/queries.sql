-- The statements both stores run, each written once (gateway/store/sql/__init__.py loads them
-- by name). Placeholders: $1, $2...; SQLite runs them as ?1, ?2... Times are epoch seconds,
-- JSON is text (gateway/store/rows.py encodes both).

-------------------------------------------------------------------------- approvals

-- name: rule_history
-- `rules report`: the rules' events since $1 (`suspended` names the rule that matched, `rule_shadow`
-- what a shadow rule would have done), each with its approval as it stands now; at most $2, oldest
-- first. A report over days, not a hot path: it reads the events by time without an index of its own.
SELECT e.approval_id, e.kind, e.data, a.agent, a.status, a.decision
FROM events e JOIN approvals a ON a.id = e.approval_id
WHERE e.kind IN ('suspended', 'rule_shadow') AND e.at >= $1
ORDER BY e.id LIMIT $2;

-- name: insert_approval
-- The columns in rows.APPROVAL_COLUMNS order (rows.approval_values), then the namespace of its
-- run id and key (migration 17); a second suspend with the same idempotency key in the same
-- namespace inserts nothing and reads the first (approval_by_key).
INSERT INTO approvals (
    id, idempotency_key, run_id, step, title, summary, args, state, channels, approvers, policy,
    worker, requested_by, status, version, created_at, deadline, wake_at, votes, decision,
    escalations, reminders_sent, args_hash, sealed, agent, terms, proposal, extensions, code_version,
    traceparent, tracestate, namespace
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
    $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32
) ON CONFLICT (namespace, idempotency_key) DO NOTHING;

-- name: approval_by_key
-- Index approvals_key.
SELECT * FROM approvals WHERE namespace = $1 AND idempotency_key = $2;

-- name: get_approval
SELECT * FROM approvals WHERE id = $1;

-- name: save_transition
-- Compare-and-set on version: every column but id (rows.approval_values()[1:]), then the id
-- and the expected version. A transition releases the wake-up lease (claim_due).
UPDATE approvals SET
    idempotency_key = $1, run_id = $2, step = $3, title = $4, summary = $5, args = $6, state = $7,
    channels = $8, approvers = $9, policy = $10, worker = $11, requested_by = $12, status = $13,
    version = $14, created_at = $15, deadline = $16, wake_at = $17, votes = $18, decision = $19,
    escalations = $20, reminders_sent = $21, args_hash = $22, sealed = $23, agent = $24,
    terms = $25, proposal = $26, extensions = $27, code_version = $28, traceparent = $29, tracestate = $30,
    wake_owner = NULL, wake_lease_until = NULL
WHERE id = $31 AND version = $32;

-- name: save_policy_transition
-- The scheduler's CAS: only what a timeout, escalation or reminder changes (rows.POLICY_COLUMNS,
-- rows.policy_values), then the id and the expected version.
UPDATE approvals SET
    status = $1, version = $2, deadline = $3, wake_at = $4, decision = $5, escalations = $6,
    reminders_sent = $7, channels = $8, approvers = $9, wake_owner = NULL, wake_lease_until = NULL
WHERE id = $10 AND version = $11;

-- name: due_approvals
SELECT * FROM approvals WHERE wake_at IS NOT NULL AND wake_at <= $1 ORDER BY wake_at LIMIT $2;

-- name: next_wake_at
SELECT MIN(wake_at) AS m FROM approvals WHERE wake_at IS NOT NULL;

-- name: count_by_status
SELECT status, COUNT(*) AS n FROM approvals GROUP BY status;

-------------------------------------------------------------------------- grants

-- name: insert_grant
-- A standing grant, written with the approve that made it (save_transition) or alone.
INSERT INTO grants (
    id, namespace, step, run_id, fields, args_hash, duration, granted_by, person, approval_id,
    created_at, expires_at, revoked_at, revoked_by, uses, last_used_at
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16);

-- name: get_grant
SELECT * FROM grants WHERE id = $1;

-- name: live_grants
-- The grants that may decide a suspend: its namespace and step, live at $3, for any run or its
-- own (index grants_lookup); the covered-args hash is compared by the caller (each grant names
-- its own fields).
SELECT * FROM grants
WHERE namespace = $1 AND step = $2 AND expires_at > $3 AND revoked_at IS NULL
    AND (run_id IS NULL OR run_id = $4)
ORDER BY expires_at DESC, id LIMIT 50;

-- name: list_live_grants
SELECT * FROM grants WHERE revoked_at IS NULL AND expires_at > $1 ORDER BY created_at DESC, id LIMIT $2;

-- name: list_all_grants
SELECT * FROM grants ORDER BY created_at DESC, id LIMIT $1;

-- name: revoke_grant
-- Once: a second revocation changes nothing (and records nothing).
UPDATE grants SET revoked_at = $2, revoked_by = $3 WHERE id = $1 AND revoked_at IS NULL;

-- name: use_grant
-- A suspend the grant decided, in the transaction that creates it: only while it lives, so a
-- revocation or expiry that committed first makes the suspend fall back to asking.
UPDATE grants SET uses = uses + 1, last_used_at = $2 WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2;

-------------------------------------------------------------------------- delegations (migration 22)

-- name: insert_delegation
INSERT INTO delegations (
    id, delegator, delegate, starts_at, ends_at, reason, created_by, created_at, revoked_at, revoked_by
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- name: get_delegation
SELECT * FROM delegations WHERE id = $1;

-- name: active_delegations
-- The delegations in force at $1 (index delegations_live); the caller matches the delegate.
SELECT * FROM delegations
WHERE ends_at > $1 AND starts_at <= $1 AND revoked_at IS NULL
ORDER BY created_at, id LIMIT 500;

-- name: active_delegations_to
-- Those in force at $1 to the identity $2: one person's, never crowded out by everyone else's.
SELECT * FROM delegations
WHERE delegate = $2 AND ends_at > $1 AND starts_at <= $1 AND revoked_at IS NULL
ORDER BY created_at, id LIMIT 500;

-- name: list_live_delegations
-- Not over yet (in force, or starting later), newest first.
SELECT * FROM delegations WHERE revoked_at IS NULL AND ends_at > $1 ORDER BY created_at DESC, id LIMIT $2;

-- name: list_all_delegations
SELECT * FROM delegations ORDER BY created_at DESC, id LIMIT $1;

-- name: revoke_delegation
-- Once: a second revocation changes nothing (and records nothing).
UPDATE delegations SET revoked_at = $2, revoked_by = $3 WHERE id = $1 AND revoked_at IS NULL;

-- name: use_delegation
-- A decision through it, in the decision's transaction: only while it is in force at $2, so a
-- revocation that committed first refuses the decision (and on PostgreSQL the row lock orders
-- the two).
UPDATE delegations SET uses = uses + 1, last_used_at = $2
WHERE id = $1 AND revoked_at IS NULL AND starts_at <= $2 AND ends_at > $2;

-- name: insert_delegation_event
INSERT INTO delegation_events (delegation_id, at, kind, actor, approval_id) VALUES ($1, $2, $3, $4, $5);

-- name: delegation_events
SELECT * FROM delegation_events WHERE delegation_id = $1 ORDER BY at LIMIT 1000;

-------------------------------------------------------------------------- events

-- name: insert_event
-- SQLite sends a storm's events as multi-row inserts of this row (sqlite/writes.py); PostgreSQL
-- inserts them with their heads in one statement (insert_chained_events). seq and hash: the
-- event's link in its approval's chain (gateway/core/audit.py, migration 13).
INSERT INTO events (approval_id, kind, at, actor, channel, data, seq, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8);

-- name: list_events
SELECT * FROM events WHERE approval_id = $1 ORDER BY id;

-- name: last_event_id
SELECT COALESCE(MAX(id), 0) AS m FROM events;

-------------------------------------------------------------------------- outbox and cards

-- name: insert_posted
-- A card posted in the same commit (the web inbox's own): recorded as the outbox would have.
INSERT INTO outbox (approval_id, channel, kind, status, attempts, next_attempt_at, data, created_at, updated_at)
VALUES ($1, $2, 'post', 'done', 1, $3, $4, $3, $3);

-- name: upsert_card
-- What a delivery learned about a card; a later update without a ref keeps the known one. A post's
-- answer naming the message a press already adopted (done, same ref) changes nothing: no row.
INSERT INTO cards (approval_id, channel, ref, status, error, posted_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (approval_id, channel) DO UPDATE SET
    ref = COALESCE(excluded.ref, cards.ref), status = excluded.status, error = excluded.error,
    updated_at = excluded.updated_at
WHERE NOT (cards.status = 'done' AND excluded.status = 'done' AND cards.ref = excluded.ref);

-- name: list_outbox
SELECT * FROM outbox WHERE approval_id = $1 ORDER BY id;

-- name: outbox_approval
-- The approval of a delivery SQLite has just finished (PostgreSQL's finish_outbox returns it).
SELECT approval_id FROM outbox WHERE id = $1;

-- name: webhook_backlog
-- The dashboard: per webhook, its events not yet acknowledged (failing: tried at least once) and
-- those given up, with the newest error; walks the partial index outbox_events_open (migration 23).
SELECT channel, status, COUNT(*) AS n, SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END) AS tried
FROM outbox WHERE kind = 'event' AND status IN ('pending', 'failed') GROUP BY channel, status;

-- name: webhook_last_error
-- The newest error of each webhook's open or given-up events (index outbox_events_open).
SELECT o.channel, o.last_error, o.updated_at FROM outbox o
JOIN (SELECT channel, MAX(updated_at) AS at FROM outbox
      WHERE kind = 'event' AND status IN ('pending', 'failed') AND last_error IS NOT NULL GROUP BY channel) newest
  ON newest.channel = o.channel AND newest.at = o.updated_at
WHERE o.kind = 'event' AND o.status IN ('pending', 'failed') AND o.last_error IS NOT NULL;

-- name: get_card
SELECT * FROM cards WHERE approval_id = $1 AND channel = $2;

-- name: list_cards
SELECT * FROM cards WHERE approval_id = $1 ORDER BY channel;

-- name: cards_needing_attention
-- Newest first, for the dashboard; walks the partial index cards_attention (migration 9).
SELECT * FROM cards WHERE status IN ('failed', 'uncertain') ORDER BY updated_at DESC LIMIT $1;

-- name: requeue_post
-- An operator's "post it again": the card's one post row goes back to pending.
UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $1, updated_at = $1,
    last_error = NULL, lease_owner = NULL, lease_until = NULL
WHERE approval_id = $2 AND channel = $3 AND kind = 'post' AND status IN ('failed', 'uncertain');

-- name: requeue_event
-- An operator's "send again" of an outbound event given up: pending again with a fresh count of
-- tries, and a fresh give-up window from resent_at. Its document (and webhook-id) stay the same.
UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $1, updated_at = $1, resent_at = $1,
    last_error = NULL, lease_owner = NULL, lease_until = NULL
WHERE id = $2 AND kind = 'event' AND status = 'failed';

-- name: adopt_card
-- A card found by a press on it (its post had no recorded answer): recorded unless one already is.
INSERT INTO cards (approval_id, channel, ref, status, error, posted_at, updated_at)
VALUES ($1, $2, $3, 'done', NULL, $4, $5)
ON CONFLICT (approval_id, channel) DO UPDATE SET
    ref = excluded.ref, status = 'done', error = NULL,
    posted_at = COALESCE(cards.posted_at, excluded.posted_at), updated_at = excluded.updated_at
WHERE cards.ref IS NULL;

-- name: move_card
-- The card's chat moved (its platform said so): the new ref, only over the one it replaces.
UPDATE cards SET ref = $1, updated_at = $2 WHERE approval_id = $3 AND channel = $4 AND ref = $5;

-------------------------------------------------------------------------- resume jobs

-- name: insert_job
-- One job per approval: a second is ignored. SQLite: multi-row inserts of this row.
INSERT INTO resume_jobs (approval_id, worker, status, attempts, next_attempt_at, created_at, updated_at)
VALUES ($1, $2, 'queued', 0, $3, $4, $5)
ON CONFLICT (approval_id) DO NOTHING;

-- name: finish_job
-- Only the lease holder records an attempt's result, and only for its own claim (the job's
-- `claims` when it took it): the same owner may have claimed the job again after its lease ran
-- out, even after an operator's retry reset `attempts`.
UPDATE resume_jobs SET status = $1, next_attempt_at = COALESCE($2, next_attempt_at), last_error = $3,
    output_tail = COALESCE($4, output_tail), claimed_by = NULL, lease_until = NULL, updated_at = $5
WHERE id = $6 AND claimed_by = $7 AND claims = $8 AND status = 'running';

-- name: extend_job_lease
UPDATE resume_jobs SET lease_until = $1 WHERE id = $2 AND claimed_by = $3 AND claims = $4 AND status = 'running';

-- name: get_job
SELECT * FROM resume_jobs WHERE approval_id = $1;

-- name: list_jobs
-- $1: a status, or NULL for every job; $3: a principal, whose approvals' jobs alone are listed,
-- or NULL for everyone's.
SELECT * FROM resume_jobs
WHERE (CAST($1 AS TEXT) IS NULL OR status = $1)
    AND (CAST($3 AS TEXT) IS NULL OR approval_id IN (SELECT id FROM approvals WHERE agent = $3))
ORDER BY id DESC LIMIT $2;

-- name: count_jobs_by_status
SELECT status, COUNT(*) AS n FROM resume_jobs GROUP BY status;

-- name: requeue_job
-- A failed job back in the queue with a fresh attempt budget.
UPDATE resume_jobs SET status = 'queued', attempts = 0, next_attempt_at = $1, updated_at = $1, last_error = NULL
WHERE approval_id = $2 AND status = 'failed';

-------------------------------------------------------------------------- handing claims back

-- name: release_jobs
-- A claimer's jobs back in the queue, due as they were ($1 owner, $2 now): a stopping gateway's
-- (SIGTERM), or a dead replica's. The attempt they were cut short in stays counted.
UPDATE resume_jobs SET status = 'queued', claimed_by = NULL, lease_until = NULL, updated_at = $2
WHERE status = 'running' AND claimed_by = $1;

-- name: release_outbox
-- A claimer's pending deliveries, claimable again at once (index outbox_due). A post cut short
-- left its post_attempt marker: the next claimer knows it may have been sent.
UPDATE outbox SET lease_owner = NULL, lease_until = NULL WHERE status = 'pending' AND lease_owner = $1;

-- name: release_wakes
-- A claimer's leased wake-ups (due deadlines and reminders; index approvals_wake).
UPDATE approvals SET wake_owner = NULL, wake_lease_until = NULL WHERE wake_at IS NOT NULL AND wake_owner = $1;

-------------------------------------------------------------------------- journal

-- name: get_steps
-- One run of one namespace (migration 17): its primary key's prefix.
SELECT * FROM journal WHERE run_id = $1 AND namespace = $2 ORDER BY started_at, name;

-- name: get_step
SELECT * FROM journal WHERE run_id = $1 AND namespace = $2 AND name = $3;

-- name: list_runs
SELECT run_id, namespace, COUNT(*) AS steps, SUM(attempts) AS attempts, MIN(started_at) AS started_at,
    MAX(finished_at) AS last_at
FROM journal GROUP BY run_id, namespace ORDER BY last_at DESC LIMIT $1;

-- name: run_namespaces
-- The namespaces that use a run id (an operator names one with ?agent=, or gets the only one):
-- indexes approvals_run and the journal's primary key.
SELECT namespace FROM approvals WHERE run_id = $1
UNION
SELECT namespace FROM journal WHERE run_id = $1
ORDER BY namespace;

-- name: step_stats
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
LIMIT $1;

-------------------------------------------------------------------------- inbound and prompts

-- name: remember_inbound
INSERT INTO inbound (key, at) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING;

-- name: prune_inbound
-- A slice of the de-duplication marks older than $1 (index inbound_at, migration 10).
DELETE FROM inbound WHERE key IN (SELECT key FROM inbound WHERE at < $1 LIMIT $2);

-- name: prune_prompts
DELETE FROM prompts WHERE expires_at <= $1;

-- name: find_prompt
SELECT * FROM prompts WHERE key = $1 AND actor = $2;

-- name: delete_prompt
-- Taking the prompt found: of two takers (replicas) at once, the second waits for the first's
-- row lock, then deletes nothing and gets no prompt.
DELETE FROM prompts WHERE key = $1 AND actor = $2;

-- name: save_prompt
INSERT INTO prompts (key, approval_id, actor, purpose, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (key) DO UPDATE SET approval_id = excluded.approval_id, actor = excluded.actor,
    purpose = excluded.purpose, created_at = excluded.created_at, expires_at = excluded.expires_at;

-------------------------------------------------------------------------- web sessions (migration 11)

-- name: create_session
-- `id` is a hash of the cookie's session id, never the cookie itself.
INSERT INTO web_sessions (id, user_name, created_at, expires_at) VALUES ($1, $2, $3, $4);

-- name: session_user
SELECT user_name FROM web_sessions WHERE id = $1 AND expires_at > $2;

-- name: delete_session
DELETE FROM web_sessions WHERE id = $1;

-- name: session_users
SELECT DISTINCT user_name FROM web_sessions;

-- name: delete_user_sessions
DELETE FROM web_sessions WHERE user_name = $1;

-- name: prune_sessions
DELETE FROM web_sessions WHERE expires_at <= $1;

-- name: user_sessions
-- One person's live sessions, for their Sessions page (newest first).
SELECT id, created_at, expires_at FROM web_sessions WHERE user_name = $1 AND expires_at > $2
ORDER BY created_at DESC, id;

-- name: delete_own_session
-- `user_name` too: a person ends only a session of their own.
DELETE FROM web_sessions WHERE id = $1 AND user_name = $2;

-- name: delete_other_sessions
DELETE FROM web_sessions WHERE user_name = $1 AND id <> $2;

-------------------------------------------------------------------------- audit (migration 13)

-- name: last_checkpoint
SELECT * FROM audit_checkpoints ORDER BY seq DESC LIMIT 1;

-- name: insert_checkpoint
INSERT INTO audit_checkpoints (seq, at, prev, root, heads, hash, signature, key_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8);

-- name: insert_leaf
-- SQLite: multi-row inserts of this row; PostgreSQL: one executemany.
INSERT INTO audit_leaves (checkpoint, approval_id, seq, hash) VALUES ($1, $2, $3, $4);

-- name: audit_chain_start
-- The first chained event. Events without a hash were written before migration 13, so below
-- it; one above it was written by an older replica during the upgrade, or unchained by hand
-- (its hash cleared to pass as one from before).
SELECT id FROM events WHERE hash IS NOT NULL ORDER BY id LIMIT 1;

-- name: checkpoints_between
-- The checkpoints from the first taken at or after $1 to the last taken at or before $2, and
-- every one between them by seq: a host clock set back (then corrected) dates a checkpoint
-- before its predecessor, and a range by time alone would leave a hole in the chain.
SELECT * FROM audit_checkpoints
WHERE seq BETWEEN (SELECT MIN(seq) FROM audit_checkpoints WHERE at >= $1)
    AND (SELECT MAX(seq) FROM audit_checkpoints WHERE at <= $2)
ORDER BY seq;

-- name: leaves_between
SELECT checkpoint, approval_id, seq, hash FROM audit_leaves
WHERE checkpoint BETWEEN (SELECT MIN(seq) FROM audit_checkpoints WHERE at >= $1)
    AND (SELECT MAX(seq) FROM audit_checkpoints WHERE at <= $2)
ORDER BY checkpoint, approval_id;

-- name: prune_raw
-- Retention: the sealed raw args and state of decided approvals with no event since $1 (the
-- decision, the job's end: the clock starts at the last of them, not at the suspend) whose
-- resume job (if any) succeeded, a slice of $2 at a time. A failed job keeps them (it can be
-- retried); the events, which hold the redacted view only, and their chain are untouched.
-- '' marks them removed (models.PRUNED): unlike NULL, which an approval stored before sealing
-- existed has, it must not be read as "the redacted args are the raw ones".
UPDATE approvals SET sealed = '' WHERE id IN (
    SELECT a.id FROM approvals a
    WHERE a.sealed IS NOT NULL AND a.sealed <> '' AND a.status <> 'waiting_approval' AND a.created_at < $1
        AND NOT EXISTS (SELECT 1 FROM events e WHERE e.approval_id = a.id AND e.at >= $1)
        AND NOT EXISTS (SELECT 1 FROM resume_jobs j
                        WHERE j.approval_id = a.id AND (j.status <> 'succeeded' OR j.updated_at >= $1))
    LIMIT $2
);

-------------------------------------------------------------------------- push subscriptions (migration 20)

-- name: save_push_subscription
-- A browser subscribing again (new keys, or another user signed in on it) replaces its row, under
-- a new id (migration 29): the links pushed to it before end with the old one.
INSERT INTO push_subscriptions (endpoint, user_name, p256dh, auth, created_at, password_mark, id, label)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (endpoint) DO UPDATE SET user_name = excluded.user_name, p256dh = excluded.p256dh,
    auth = excluded.auth, created_at = excluded.created_at, password_mark = excluded.password_mark,
    id = excluded.id, label = excluded.label;

-- name: push_subscriptions
SELECT endpoint, user_name, p256dh, auth, created_at, password_mark, id, label
FROM push_subscriptions ORDER BY user_name, created_at;

-- name: push_subscription
-- The subscription a push's link was pushed to, if it is still kept.
SELECT endpoint, user_name, p256dh, auth, created_at, password_mark, id, label
FROM push_subscriptions WHERE id = $1;

-- name: delete_push_subscription
DELETE FROM push_subscriptions WHERE endpoint = $1;

-- name: delete_user_push_subscription
-- Unsubscribing: only the signed-in user's own row.
DELETE FROM push_subscriptions WHERE endpoint = $1 AND user_name = $2;

-- name: revoke_push_subscription
-- The devices page's Revoke: by id, and only the signed-in user's own row.
DELETE FROM push_subscriptions WHERE id = $1 AND user_name = $2;

-------------------------------------------------------------------------- claimed groups (migration 21)

-- name: delete_claimed_groups
-- A sign-in replaces the identity's claimed groups: first the old rows go.
DELETE FROM oidc_groups WHERE identity = $1;

-- name: add_claimed_group
INSERT INTO oidc_groups (identity, group_name, claimed_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING;

-- name: claimed_groups
-- Only claims made since $2: a claim lasts as long as the sign-in's session may (web.session_max_age).
SELECT DISTINCT group_name FROM oidc_groups WHERE identity = $1 AND claimed_at >= $2;

-------------------------------------------------------------------------- migrations

-- name: create_schema_migrations
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL
);

-- name: applied_migrations
SELECT version FROM schema_migrations;

-- name: record_migration
INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3);

-- name: schema_version
SELECT COALESCE(MAX(version), 0) FROM schema_migrations;
