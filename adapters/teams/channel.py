"""The one I/O class: the Bot Connector (`connector.py`) and the activity endpoint
(`webhook.py`), on the runtime's shared aiohttp session.

A card's reference is '<conversation id>|<activity id>'. Posting is not repeated after an
attempt whose outcome nobody knows (the Bot Connector has no idempotency key): such a card stays
`uncertain` until someone presses it, which adopts it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from aiohttp import web

from adapters.teams import render
from adapters.teams.auth import Keys
from adapters.teams.connector import Connector
from adapters.teams.parse import make_ref
from adapters.teams.spec import TeamsSettings
from adapters.teams.webhook import PATH, ActivityHandler
from gateway.core import rounds
from gateway.core.models import Approval
from gateway.plugin import Attempt, ChannelBase, ChannelContext, DeliveryError, OutgoingCard, web_card_ref

log = logging.getLogger("adapters.teams")
LOOKUPS_AT_ONCE = 8  # member look-ups in flight while a card is first drawn


def split_ref(ref: str) -> tuple[str, str]:
    """'19:abc@thread.tacv2|1700000000000' -> ('19:abc@thread.tacv2', '1700000000000')."""
    conversation, _, activity_id = ref.rpartition("|")
    return conversation, activity_id


class Members:
    """The Teams user ids ('29:…') of the approvers, per conversation: what `refresh.userIds`
    lists. Learnt from the Bot Connector (members by Entra object id) and from presses."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], str | None] = {}

    def learn(self, conversation: str, object_id: str, mri: str) -> None:
        self._known[(conversation, object_id.lower())] = mri

    async def ids(self, connector: Connector, conversation: str, object_ids: Sequence[str]) -> tuple[str, ...]:
        wanted = list(object_ids[: render.USER_IDS_MAX])
        unknown = [oid for oid in wanted if (conversation, oid) not in self._known]
        if unknown:  # asked once, a few at a time; a miss is remembered too (until a press teaches it)
            gate = asyncio.Semaphore(LOOKUPS_AT_ONCE)

            async def ask(oid: str) -> None:
                async with gate:
                    try:
                        self._known[(conversation, oid)] = await connector.member(conversation, oid)
                    except DeliveryError as exc:  # asked again next time
                        log.warning("teams: cannot look member %s up now: %s", oid, exc)

            await asyncio.gather(*(ask(oid) for oid in unknown))
        return tuple(mri for oid in wanted if (mri := self._known.get((conversation, oid))))


class TeamsChannel(ChannelBase):
    kind = "teams"
    resend_unknown = False
    posts_in_flight: int | None = 4  # the Bot Connector throttles per conversation

    def __init__(self, ctx: ChannelContext) -> None:
        settings: TeamsSettings = ctx.settings
        self._ctx, self._settings = ctx, settings
        now = ctx.clock.now
        self.connector = Connector(
            app_id=settings.app_id,
            app_password=settings.app_password,
            token_url=settings.token_url,
            service_url=settings.service_url,
            session=ctx.http,
            now=now,
        )
        self.keys = Keys(settings.openid_metadata, ctx.http, now)
        self.members = Members()
        self.webhook = ActivityHandler(ctx, self, self.keys)

    async def start(self) -> None:
        await self.keys.prefetch()  # a failure is logged; the keys are asked for again on a press

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        return [web.post(PATH, self.webhook.handle)]

    # ---------------------------------------------------------------- views
    def _approver_ids(self) -> list[str]:
        """The Entra object ids of whoever may decide here (the allowlist, or `[people]`)."""
        found = self._ctx.approvers if self._ctx.approvers is not None else self._settings.approvers
        return sorted(a.partition(":")[2].lower() if ":" in a else a.lower() for a in found)

    def may_decide(self, actor: str) -> bool:
        """Whether `actor` gets the buttons in their own view (every press is authorized anyway)."""
        return self._ctx.approvers is None or actor.lower() in self._ctx.approvers

    async def view(
        self, approval: Approval, conversation: str, *, for_actor: str | None = None, notice: str | None = None
    ) -> render.View:
        """The view of `approval` for one person (`for_actor`), or the shared one (None)."""
        user_ids = (
            () if approval.status.final else await self.members.ids(self.connector, conversation, self._approver_ids())
        )
        return render.View(
            ref=make_ref(self._ctx.signer, approval.id),
            seen=rounds.tag(self._ctx.signer, approval),
            buttons=for_actor is not None and self.may_decide(for_actor),
            decides=self._ctx.decides,
            user_ids=user_ids,
            notice=notice,
            page=f"{self._ctx.public_url}{web_card_ref(approval.id)}" if self._ctx.public_url else "",
        )

    async def _activity(self, approval: Approval, conversation: str) -> dict[str, object]:
        element = render.fitted(approval, await self.view(approval, conversation))
        if render.size(element) > render.CARD_MAX:  # compact and still too big: say so, do not loop
            log.warning("teams: the card of %s is too big even compact", approval.id)
        return render.message(approval, element)

    # ---------------------------------------------------------------- the outbox's calls
    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        activity = await self._activity(card.approval, card.target)
        activity_id = await self.connector.post(card.target, activity)
        return f"{card.target}|{activity_id}"

    async def update_card(self, card: OutgoingCard) -> None:
        assert card.ref is not None
        conversation, activity_id = split_ref(card.ref)
        await self.connector.update(conversation, activity_id, await self._activity(card.approval, conversation))

    async def send_reminder(self, card: OutgoingCard) -> None:
        if card.ref:
            conversation, activity_id = split_ref(card.ref)
            await self.connector.reply(conversation, activity_id, render.reminder(card.approval))
        else:
            await self.connector.post(card.target, render.reminder(card.approval))


__all__ = ["TeamsChannel", "split_ref"]
