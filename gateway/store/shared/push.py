"""The Web Push subscriptions and the claimed groups ports, written once over the named SQL
(backend.py): both are what a web user's browser or sign-in left behind."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from gateway.core.clock import to_ts
from gateway.core.webpush import PushSubscription
from gateway.store.shared.backend import Backend, Tx

__all__ = ["ClaimsSQL", "PushSQL"]


class PushSQL(Backend):
    async def save_push_subscription(self, sub: PushSubscription) -> None:
        values = (sub.endpoint, sub.user, sub.p256dh, sub.auth, to_ts(sub.created_at), sub.password_mark)
        await self.changed_rows(self.Q.save_push_subscription, values)

    async def push_subscriptions(self) -> list[PushSubscription]:
        return [
            PushSubscription(r[0], r[1], r[2], r[3], datetime.fromtimestamp(r[4], UTC), r[5])
            for r in await self.fetch_all(self.Q.push_subscriptions)
        ]

    async def delete_push_subscription(self, endpoint: str, user: str | None = None) -> bool:
        if user is None:
            return await self.changed_rows(self.Q.delete_push_subscription, (endpoint,)) > 0
        return await self.changed_rows(self.Q.delete_user_push_subscription, (endpoint, user)) > 0


class ClaimsSQL(Backend):
    """The groups a person's OpenID sign-in claimed (migration 21)."""

    async def set_claimed_groups(self, identity: str, groups: Collection[str], now: datetime) -> None:
        rows = [(identity, name, to_ts(now)) for name in sorted(set(groups))]

        async def op(tx: Tx) -> None:
            await tx.execute(self.Q.delete_claimed_groups, (identity,))
            for row in rows:
                await tx.execute(self.Q.add_claimed_group, row)

        await self.transact(op)

    async def claimed_groups(self, identity: str, since: datetime) -> frozenset[str]:
        rows = await self.fetch_all(self.Q.claimed_groups, (identity, to_ts(since)))
        return frozenset(str(r[0]) for r in rows)
