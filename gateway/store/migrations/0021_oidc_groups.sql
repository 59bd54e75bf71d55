-- migration: oidc_groups: the groups a person's OpenID sign-in claimed
-- One row per (identity, group): the groups claim of the identity's latest sign-in, mapped to
-- configured group names (gateway/http/web/oidc.py). Each sign-in replaces the identity's rows,
-- so a group the provider dropped is gone at the next sign-in; every replica reads the same rows.
CREATE TABLE oidc_groups (
    identity   TEXT NOT NULL,
    group_name TEXT NOT NULL,
    claimed_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (identity, group_name)
);
