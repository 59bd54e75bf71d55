"""The web inbox's sessions and one-time links, kept in the store.

The store keeps a hash of each session id (table `web_sessions`), so that reading the table gives
no usable cookie; signing the cookie is the web layer's (gateway.http.web.sessions).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from datetime import timedelta

from gateway.core.clock import Clock
from gateway.store import Store, WebSession


def key_of(session_id: str) -> str:
    """The store's name for a session: a hash of the cookie's session id."""
    return _key(session_id)


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class WebSessions:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store, self._clock = store, clock

    async def open(self, session_id: str, user: str, max_age: timedelta) -> None:
        now = self._clock.now()
        await self._store.create_session(_key(session_id), user, now, now + max_age)

    async def user_of(self, session_id: str) -> str | None:
        """The user of a live session (not revoked, not expired), else None."""
        return await self._store.session_user(_key(session_id), self._clock.now())

    async def revoke(self, session_id: str) -> None:
        await self._store.delete_session(_key(session_id))

    async def of(self, user: str) -> list[WebSession]:
        """`user`'s live sessions, newest first (their Sessions page)."""
        return await self._store.user_sessions(user, self._clock.now())

    async def end(self, user: str, key: str) -> bool:
        """End `user`'s session named `key` (the store's hash); False if it is not theirs (or
        gone): another's is left alone."""
        return await self._store.delete_user_session(user, key)

    async def end_others(self, user: str, session_id: str) -> int:
        """End every session of `user` but the one of `session_id` (this browser's)."""
        return await self._store.delete_other_sessions(user, _key(session_id))

    async def keep_only(self, users: Collection[str]) -> int:
        """Delete the sessions of every user not in `users` (removed from `[web]`)."""
        return await self._store.delete_sessions(users)

    async def set_claimed_groups(self, identity: str, groups: Collection[str]) -> None:
        """What a sign-in through the provider claimed (`[web.oidc]`): it replaces the last one's."""
        await self._store.set_claimed_groups(identity, groups, self._clock.now())

    async def claimed_groups(self, identity: str, max_age: timedelta) -> frozenset[str]:
        """The groups `identity`'s sign-in claimed within `max_age` (a session's longest life):
        a person removed from a group at the provider loses it at the latest then."""
        return await self._store.claimed_groups(identity, self._clock.now() - max_age)

    async def first_use(self, key: str) -> bool:
        """Whether a one-time link (`key`) is used for the first time; it is remembered."""
        return await self._store.remember_inbound(key, self._clock.now())


__all__ = ["WebSessions", "key_of"]
