-- migration: push_subscriptions: the web inbox's approvers' Web Push subscriptions
-- One row per browser (its push service endpoint), for one web user; the keys are the browser's
-- public P-256 key and auth secret (base64url), with which each push is encrypted. A push the
-- push service answers 404 or 410 deletes its row (gateway/delivery/webpush.py).
CREATE TABLE push_subscriptions (
    endpoint   TEXT PRIMARY KEY,
    user_name  TEXT NOT NULL,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_name);
