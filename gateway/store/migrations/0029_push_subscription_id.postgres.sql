-- migration: push subscription id: each push subscription has an id and a device label
-- The links a push carries name the subscription they were pushed to (its random id), and work
-- only while it is kept: unsubscribing a browser, or revoking it from the devices page (a lost
-- phone), ends its links too (gateway/http/web/push.py). The label is what the browser said it
-- was when it subscribed ("Chrome on Android"). The default draws a random id for each row: those
-- saved before, and those an older replica saves during a rolling upgrade (it names no id).
ALTER TABLE push_subscriptions ADD COLUMN id TEXT NOT NULL DEFAULT md5(random()::text || clock_timestamp()::text);
ALTER TABLE push_subscriptions ADD COLUMN label TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX push_subscriptions_id ON push_subscriptions (id);
