-- migration: events: the open and given-up deliveries of outbound events, per webhook
-- Outbound events (gateway/core/webhooks.py) are outbox rows of kind 'event', addressed
-- webhook:<name>. The dashboard counts, per webhook, those still pending and those given up
-- (queries.sql webhook_backlog); delivered ones, the bulk, stay out of this index.
CREATE INDEX outbox_events_open ON outbox (channel, updated_at) WHERE kind = 'event' AND status IN ('pending', 'failed');
