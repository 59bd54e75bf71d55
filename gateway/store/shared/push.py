"""The Web Push subscriptions port, written once over the named SQL (backend.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.core.clock import to_ts
from gateway.core.webpush import PushSubscription
from gateway.store.shared.backend import Backend

__all__ = ["PushSQL"]


class PushSQL(Backend):
    async def save_push_subscription(self, sub: PushSubscription) -> None:
        values = (sub.endpoint, sub.user, sub.p256dh, sub.auth, to_ts(sub.created_at))
        await self.changed_rows(self.Q.save_push_subscription, values)

    async def push_subscriptions(self) -> list[PushSubscription]:
        return [
            PushSubscription(r[0], r[1], r[2], r[3], datetime.fromtimestamp(r[4], UTC))
            for r in await self.fetch_all(self.Q.push_subscriptions)
        ]

    async def delete_push_subscription(self, endpoint: str, user: str | None = None) -> bool:
        if user is None:
            return await self.changed_rows(self.Q.delete_push_subscription, (endpoint,)) > 0
        return await self.changed_rows(self.Q.delete_user_push_subscription, (endpoint, user)) > 0
