-- migration: pending prompts (telegram reject reasons)
-- Pending "why?" prompts (telegram), e.g. the reason asked for after a Reject press. `key`
-- names the prompt on its channel ("telegram:<chat_id>:<prompt_message_id>"). Types differ.
CREATE TABLE prompts (
    key         TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL,
    actor       TEXT NOT NULL,
    purpose     TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX prompts_expires ON prompts (expires_at);
