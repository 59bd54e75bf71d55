"""The one I/O class: cards, reminders and outcomes sent with aiosmtplib, and the pages of the
confirmation flow (GET shows, POST decides).

A card is a mail per addressee (`email:<address>`) with one-time Approve and Reject links. A GET
on a link never decides: mail scanners prefetch links. It opens a confirmation page that sets a
cookie; the page's form POSTs with a CSRF token bound to that cookie and to the link, and the
press use case decides as the link's addressee. After any decision the outbox syncs the card,
which for a mail means a short outcome mail in the card's thread.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from email.message import EmailMessage

import aiosmtplib
from aiohttp import web

from adapters.email import links, pages, render
from adapters.email.errors import delivery_error
from adapters.email.spec import EmailSettings
from gateway.core import extend as extend_rules
from gateway.core import rounds
from gateway.core.durations import format_duration, parse_duration
from gateway.core.errors import GatewayError, InvalidToken, TokenExpired
from gateway.core.models import Approval, Outcome
from gateway.plugin import (
    Attempt,
    ChannelBase,
    ChannelContext,
    DeliveryError,
    OutgoingCard,
    Press,
    PressResult,
    already_text,
    argsform,
)

log = logging.getLogger("adapters.email")
COOKIE = "hitl_email_csrf"
POSTS_IN_FLIGHT = 4  # SMTP connections at a time
STALE_MAIL = 100_000  # the reminder numbers of mails sent after a stale Approve (1000+: an edit's)
_STATUS = {
    PressResult.DENIED: 403,
    PressResult.UNKNOWN: 404,
    PressResult.ALREADY_DECIDED: 409,
    PressResult.BUSY: 503,
    PressResult.STALE: 409,
}
# What a confirm committed itself (a redelivered press may too: see `confirm`)
_COMMITTED = frozenset({PressResult.APPROVED, PressResult.REJECTED, PressResult.VOTE, PressResult.EDITED})


class EmailChannel(ChannelBase):
    """Nothing to start or close (ChannelBase): one SMTP connection per mail."""

    kind = "email"
    # A mail sent again after an unknown outcome keeps its Message-ID: the same message, not a second one.
    resend_unknown = True
    posts_in_flight = POSTS_IN_FLIGHT

    def __init__(self, ctx: ChannelContext) -> None:
        self.ctx = ctx
        self.settings: EmailSettings = ctx.settings
        self._secure_cookie = ctx.public_url.startswith("https://")

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        path = links.PATH + "{token}"
        return (web.get(path, self.page), web.post(path, self.confirm))

    # ---------------------------------------------------------------- Channel protocol
    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        extend = self._extend_links(card.approval, card.target) if self._decides(card.target) else {}
        msg = render.card(
            card.approval, self.settings.from_, card.target, self._links(card.approval, card.target), extend
        )
        await self._send(msg)
        return str(msg["Message-ID"])

    async def update_card(self, card: OutgoingCard) -> None:
        """A sent mail cannot change: once decided, the addressee gets the outcome instead; after
        an Approve from a mail whose args changed since (`stale`), a mail with the current ones."""
        approval = card.approval
        if approval.status.final:
            await self._send(render.outcome(approval, self.settings.from_, card.target))
        elif card.data.get("stale") and self._decides(card.target):  # one Message-ID per version
            number = STALE_MAIL + approval.version
            links_ = self._links(approval, card.target)
            await self._send(render.reminder(approval, self.settings.from_, card.target, links_, number))

    async def send_reminder(self, card: OutgoingCard) -> None:
        # an edit that restarted the votes asks again: its own message in the thread per round
        number = 1000 + int(card.data["edited"]) if "edited" in card.data else card.data.get("number", 1)
        approval = card.approval
        if not self._decides(card.target):  # a mail for information only: nobody asks it to act
            return
        links_ = self._links(approval, card.target)
        await self._send(render.reminder(approval, self.settings.from_, card.target, links_, int(number)))

    def _decides(self, to: str) -> bool:
        """Whether the addressee may decide at all (`email.approvers`, or `[people]`): others get
        the card without links, for information."""
        return self.ctx.approvers is None or f"email:{to}" in self.ctx.approvers

    def _links(self, approval: Approval, to: str) -> dict[Outcome, str]:
        """This round's Approve and Reject links (each bound to the args the mail shows); none
        for an addressee who may not decide."""
        if not self._decides(to):
            return {}
        age, seen = self.settings.link_max_age, rounds.tag(self.ctx.signer, approval)
        return {
            o: links.url(self.ctx.public_url, links.token(self.ctx.signer, approval, to, o, age, seen=seen))
            for o in (Outcome.APPROVE, Outcome.REJECT)
        }

    def _extend_links(self, approval: Approval, to: str) -> dict[str, str]:
        """'+1h' -> a one-time link that extends the deadline by the policy's 1h."""
        age, out = self.settings.link_max_age, {}
        for d in extend_rules.choices(approval):
            t = links.token(self.ctx.signer, approval, to, Outcome.APPROVE, age, extend=format_duration(d))
            out[extend_rules.label(d)] = links.url(self.ctx.public_url, t)
        return out

    async def _send(self, msg: EmailMessage) -> None:
        s = self.settings
        try:
            await aiosmtplib.send(
                msg,
                hostname=s.host,
                port=s.port,
                username=s.username or None,
                password=s.password or None,
                use_tls=s.tls,
                start_tls=False if s.tls else s.starttls,
                timeout=s.timeout.total_seconds(),
            )
        except aiosmtplib.SMTPException as exc:
            raise delivery_error(exc) from None
        except OSError as exc:  # a socket error aiosmtplib did not wrap
            raise DeliveryError(f"smtp: {type(exc).__name__}: {exc}"[:300], transient=True) from None

    # ---------------------------------------------------------------- the confirmation flow
    def _link(self, request: web.Request) -> tuple[str, links.Link | web.Response]:
        token = request.match_info["token"]
        try:
            return token, links.read(self.ctx.signer, token, self.ctx.clock.now())
        except TokenExpired:
            return token, _html(410, "This link has expired", "Decide in the web inbox, or ask for a new request.")
        except InvalidToken:
            return token, _html(401, "This link is not valid", "It may have been cut or changed on the way.")

    async def page(self, request: web.Request) -> web.Response:
        """GET: show what the link would decide, and a form to confirm it. Decides nothing."""
        token, link = self._link(request)
        if isinstance(link, web.Response):
            return link
        approval = await self.ctx.inbound.approval(link.approval_id)
        if approval is None:
            return _html(404, "Not found", "This approval no longer exists.")
        if approval.status.final:
            return _html(200, "Nothing to do", already_text(approval))
        cookie = request.cookies.get(COOKIE) or secrets.token_urlsafe(18)
        csrf = links.csrf(self.ctx.signer, cookie, token)
        page = pages.confirm_extend if link.extend else pages.confirm
        body = page(approval, link, links.PATH + token, csrf)
        resp = _page(200, body)
        resp.set_cookie(
            COOKIE, cookie, path=links.PATH, httponly=True, samesite="Strict", secure=self._secure_cookie, max_age=3600
        )
        return resp

    async def confirm(self, request: web.Request) -> web.Response:
        """POST from the page: check the CSRF token, use the link once, and press as its addressee."""
        token, link = self._link(request)
        if isinstance(link, web.Response):
            return link
        fields = await _form(request)
        if fields is None:
            return _html(400, "This form could not be read", "Open the link again and confirm on its page.")
        given, reason = fields.get("csrf"), fields.get("reason")
        if not links.csrf_ok(self.ctx.signer, request.cookies.get(COOKIE), token, given):
            return _html(403, "Please confirm again", "This form was not opened from its link; open the link again.")
        comment = reason.strip()[:1000] if reason is not None and link.outcome is Outcome.REJECT else ""
        actor = f"email:{link.addressee}"
        if link.extend:
            return await self._extend(link, actor)
        refused = await self._refused(request, token, link, actor, fields, comment)
        if refused is not None:  # checked before the link is used: it works until a decision is taken
            return refused
        approval = await self.ctx.inbound.approval(link.approval_id)
        args = argsform.read(approval, fields) if approval and link.outcome is Outcome.APPROVE else None
        # The link's use commits with the vote (its mark in the same write): a confirm that died
        # before that commit leaves the link unused, so confirming again decides.
        verdict = await self.ctx.inbound.press(
            Press(
                approval_id=link.approval_id,
                outcome=link.outcome,
                actor=actor,
                channel=actor,
                card_ref=render.message_id(link.approval_id, link.addressee, "card", self.settings.from_),
                comment=comment or None,
                args=args,
                seen=link.seen,
                marks=(links.use_key(link),),
            )
        )
        if verdict.redelivered and verdict.result not in _COMMITTED:
            return _html(409, "This link was already used", "Each link works once.")
        # A used link whose vote an edit wiped stands for the current round again once the args
        # are back to what it was mailed for (the same link is mailed again): its confirm votes,
        # through the press's redelivered path, and the page says so.
        return _html(_STATUS.get(verdict.result, 200), verdict.text(), _after(verdict.result))

    async def _extend(self, link: links.Link, actor: str) -> web.Response:
        """The link's use is recorded with the extension (its mark commits in the same write): a
        confirm that died before that commit leaves the link unused, and a second confirm
        extends nothing."""
        press = Press(link.approval_id, Outcome.APPROVE, actor, actor, marks=(links.use_key(link),))
        verdict = await self.ctx.inbound.extend(press, parse_duration(link.extend or ""))
        if verdict.redelivered:
            return _html(409, "This link was already used", "Each link works once.")
        status = 200 if verdict.result is PressResult.EXTENDED else _STATUS.get(verdict.result, 403)
        return _html(
            status,
            verdict.text(),
            "Nothing was changed." if verdict.refused else "Everyone who was asked sees the new deadline.",
        )

    async def _refused(
        self, request: web.Request, token: str, link: links.Link, actor: str, fields: dict[str, str], comment: str
    ) -> web.Response | None:
        """The page again, with the error and what was typed, when the edit or the reason would be
        refused (gateway.service.presses.Inbound.check); None when the press may go ahead."""
        approval = await self.ctx.inbound.approval(link.approval_id)
        if approval is None or approval.status.final:
            return None  # the press says so
        try:
            args = argsform.read(approval, fields) if link.outcome is Outcome.APPROVE else None
            await self.ctx.inbound.check(approval, link.outcome, actor, args=args, comment=comment or None)
        except GatewayError as exc:
            csrf = links.csrf(self.ctx.signer, request.cookies.get(COOKIE) or "", token)
            body = pages.confirm(
                approval,
                link,
                links.PATH + token,
                csrf,
                error=exc.message,
                submitted=fields,
                error_field=exc.details.get("field"),
            )
            return _page(400, body)
        return None


async def _form(request: web.Request) -> dict[str, str] | None:
    """The POSTed form's text fields; None when it cannot be read as text a store can hold: a
    part's bytes not in the charset it names, a charset that does not exist, or an unpaired
    UTF-16 surrogate (which UTF-7 decodes to)."""
    try:
        form = await request.post()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        for key, value in fields.items():
            key.encode("utf-8")
            value.encode("utf-8")
    except (ValueError, LookupError):  # UnicodeDecodeError and UnicodeEncodeError are ValueErrors
        return None
    return fields


def _after(result: PressResult) -> str:
    if result is PressResult.STALE:
        return (
            "Nothing was recorded: another approver changed the arguments. A mail with the current ones is on its way."
        )
    if result in (PressResult.APPROVED, PressResult.REJECTED):
        return "Thank you: your decision is recorded, and everyone who was asked will see it."
    if result is PressResult.VOTE:
        return "Thank you: your approval is recorded; more approvals are needed."
    return "Nothing was changed."


def _page(status: int, body: str) -> web.Response:
    headers = {"Content-Security-Policy": pages.CSP, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
    return web.Response(status=status, text=body, content_type="text/html", headers=headers)


def _html(status: int, title: str, text: str) -> web.Response:
    return _page(status, pages.message(title, text))
