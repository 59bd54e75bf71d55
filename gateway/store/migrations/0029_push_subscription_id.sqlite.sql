-- migration: push subscription id: each push subscription has an id and a device label
-- The links a push carries name the subscription they were pushed to (its random id), and work
-- only while it is kept: unsubscribing a browser, or revoking it from the devices page (a lost
-- phone), ends its links too (gateway/http/web/push.py). The label is what the browser said it
-- was when it subscribed ("Chrome on Android"). Rows saved before get a random id each.
ALTER TABLE push_subscriptions ADD COLUMN id TEXT NOT NULL DEFAULT '';
ALTER TABLE push_subscriptions ADD COLUMN label TEXT NOT NULL DEFAULT '';
UPDATE push_subscriptions SET id = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX push_subscriptions_id ON push_subscriptions (id);
