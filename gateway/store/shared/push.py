"""The Web Push subscriptions and the claimed groups ports, written once over the named SQL
(backend.py): both are what a web user's browser or sign-in left behind."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from gateway.core.clock import to_ts
from gateway.core.webpush import PushSubscription
from gateway.store.shared.backend import Backend, Tx

__all__ = ["ClaimsSQL", "PushSQL"]


class PushSQL(Backend):
    async def save_push_subscription(self, sub: PushSubscription) -> None:
        created = to_ts(sub.created_at)
        values = (sub.endpoint, sub.user, sub.p256dh, sub.auth, created, sub.password_mark, sub.id, sub.label)
        await self.changed_rows(self.Q.save_push_subscription, values)

    async def push_subscriptions(self) -> list[PushSubscription]:
        return [_sub(r) for r in await self.fetch_all(self.Q.push_subscriptions)]

    async def push_subscription(self, sub_id: str) -> PushSubscription | None:
        row = await self.fetch_one(self.Q.push_subscription, (sub_id,))
        return None if row is None else _sub(row)

    async def revoke_push_subscription(self, sub_id: str, user: str) -> bool:
        return await self.changed_rows(self.Q.revoke_push_subscription, (sub_id, user)) > 0

    async def delete_push_subscription(self, endpoint: str, user: str | None = None) -> bool:
        if user is None:
            return await self.changed_rows(self.Q.delete_push_subscription, (endpoint,)) > 0
        return await self.changed_rows(self.Q.delete_user_push_subscription, (endpoint, user)) > 0


def _sub(r: Sequence[Any]) -> PushSubscription:
    created = datetime.fromtimestamp(r[4], UTC)
    return PushSubscription(r[0], r[1], r[2], r[3], created, r[5], id=r[6], label=r[7])


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
