-- migration: approvals.sealed: encrypted raw args and state
-- args and summary are stored redacted for display; the raw args and state are sealed
-- (encrypted) in `sealed`, for rehydration only.
ALTER TABLE approvals ADD COLUMN sealed TEXT;
