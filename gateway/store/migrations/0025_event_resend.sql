-- migration: event resend: when an operator last sent a given-up outbound event again
-- An outbound event is given up `[events] give_up_after` after it happened (its document's
-- `time`). `POST /v1/approvals/{id}/events/resend` puts a given-up one back in the queue; its
-- window starts again at resent_at (gateway/delivery/outbox.py). NULL: never sent again.
ALTER TABLE outbox ADD COLUMN resent_at DOUBLE PRECISION;
