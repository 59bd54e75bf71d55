-- migration: push password mark: a push subscription carries the mark of its user's password
-- A subscription made under a password that has changed since gets no push (its links decide
-- without a sign-in): gateway.core.password_marks, gateway/service/push.py. NULL: a subscription
-- saved before this column (not checked).
ALTER TABLE push_subscriptions ADD COLUMN password_mark TEXT;
