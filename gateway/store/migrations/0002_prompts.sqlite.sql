-- migration: pending prompts (reject reasons asked in a chat)
-- Pending "why?" prompts, e.g. the reason asked for after a Reject press in a chat. `key`
-- names the prompt on its channel ("<kind>:<chat_id>:<prompt_message_id>"). Types differ.
CREATE TABLE prompts (
    key         TEXT PRIMARY KEY,
    approval_id TEXT NOT NULL,
    actor       TEXT NOT NULL,
    purpose     TEXT NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX prompts_expires ON prompts (expires_at);
