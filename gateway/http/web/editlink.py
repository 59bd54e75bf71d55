"""GET/POST /edit/{token}: the edit form behind a one-time link (gateway.service.editlinks).

No sign-in: the signed link names who decides. The GET only shows the form (link previews and
scanners fetch links, they do not submit); the POST, with a CSRF token bound to a cookie the page
set, goes through the press use case as the link's identity, like a button press on its channel.
A refused edit re-renders the form with the error next to it and what was typed kept. The form
carries the round it was drawn for (gateway.core.rounds.tag): submitted after another approver
changed the args, it is refused (no vote), and drawn anew on the current args with a fresh link,
without what was typed (built on the old args, it would silently undo that change): an edit
on a stale form is not taken as a new proposal, because its untouched fields are the old values.
A fresh link (the refused submit used its own) expires when the one it follows does: a holder of
one link cannot renew it by submitting bad input before it expires (editlinks.successor).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from markupsafe import Markup

from gateway.core import rounds
from gateway.core.channels import parse_address
from gateway.core.errors import GatewayError, ValidationError
from gateway.core.models import Approval, Outcome
from gateway.core.tokens import TokenSigner
from gateway.http.usecases import CLOCK, INBOUND, READS, SIGNER, WEB_SESSIONS
from gateway.http.web import argsform
from gateway.http.web.auth import posted_form, render
from gateway.service import editlinks
from gateway.service.presses import Press, PressResult

routes = web.RouteTableDef()
_DONE = {
    PressResult.APPROVED: "Approved",
    PressResult.EDITED: "Your changes are recorded: the approvers vote again on them",
    PressResult.VOTE: "Your approval is recorded",
    PressResult.DUPLICATE_VOTE: "You already approved these args",
}


def _fail(request: web.Request, status: int, message: str) -> web.Response:
    return render(request, "error.html", {"status": status, "message": message}, status=status)


def _ctx(approval: Approval, link: editlinks.EditLink, token: str, **form: Any) -> dict[str, Any]:
    fs = argsform.fields(approval)
    return {
        "a": approval,
        "who": link.name or link.actor,
        "token": token,
        "fields": Markup(argsform.render(fs, form.get("submitted"), form.get("error_field"))),  # escaped there
        "change": rounds.change_text(approval) or "",
        "round": form.get("round") or "",
        "form_error": form.get("error", ""),
    }


async def _open(request: web.Request, token: str) -> tuple[editlinks.EditLink, Approval] | web.Response:
    try:
        link = editlinks.read(request.config_dict[SIGNER], token, request.config_dict[CLOCK].now())
    except GatewayError as exc:
        return _fail(request, exc.status, "This edit link is not valid or has expired. Press Edit again.")
    approval = await request.config_dict[READS].approval(link.approval_id)
    if approval is None:
        return _fail(request, 404, "This approval no longer exists.")
    if approval.status.final:
        return _fail(request, 409, f"Already {approval.status.verb}; nothing to edit.")
    return link, approval


@routes.get("/edit/{token}")
async def edit_page(request: web.Request) -> web.Response:
    """The edit form of a one-time link (shows it; only its POST decides)."""
    token = request.match_info["token"]
    opened = await _open(request, token)
    if isinstance(opened, web.Response):
        return opened
    link, approval = opened
    signer = request.config_dict[SIGNER]
    return render(request, "edit_link.html", _ctx(approval, link, token, round=rounds.tag(signer, approval)))


@routes.post("/edit/{token}")
async def edit_submit(request: web.Request) -> web.Response:
    """Approve with the edited args, as the link's identity (CSRF token required). Each submit
    uses its link; a refused edit comes back with a fresh link for the same person, which
    expires when this one does."""
    token = request.match_info["token"]
    form = posted_form(request)
    opened = await _open(request, token)
    if isinstance(opened, web.Response):
        return opened
    link, approval = opened
    if not await request.config_dict[WEB_SESSIONS].first_use(link.use_key):
        return _fail(request, 410, "This edit link was already used. Press Edit again for a new one.")
    kept = {k: v for k, v in form.items() if k.startswith(argsform.PREFIX)}
    try:
        args = argsform.read(approval, form)
        where = parse_address(link.actor)[0]
        seen = form.get("round") or None
        press = Press(approval.id, Outcome.APPROVE, link.actor, where, name=link.name, args=args, seen=seen)
        verdict = await request.config_dict[INBOUND].press(press)
        if verdict.result is PressResult.STALE and verdict.approval is not None:
            return _again(request, verdict.approval, link, status=409, error=verdict.text() + ".")
        if verdict.result is PressResult.INVALID:
            raise ValidationError(_field_of(verdict.error) or "args", (verdict.error or "").split(": ", 1)[-1])
    except GatewayError as exc:
        # what was typed is kept with the round it was typed on: stale, it is refused when sent again
        field, seen_round = exc.details.get("field"), form.get("round") or rounds.ORIGINAL
        return _again(
            request,
            approval,
            link,
            status=exc.status,
            error=exc.message,
            submitted=kept,
            error_field=field,
            round=seen_round,
        )
    if verdict.result not in _DONE:
        status = 403 if verdict.result is PressResult.DENIED else 409 if verdict.refused else 400
        return _fail(request, status, verdict.text())
    return render(request, "done.html", {"message": _DONE[verdict.result] + "."})


def _again(request: web.Request, approval: Approval, link: editlinks.EditLink, **form: Any) -> web.Response:
    """The form again, with a fresh link for the same person (expiring when `link` does), drawn
    for the current round."""
    status = form.pop("status")
    signer: TokenSigner = request.config_dict[SIGNER]
    form.setdefault("round", rounds.tag(signer, approval))
    again = editlinks.successor(signer, link)
    ctx = _ctx(approval, link, again, **form)
    return render(request, "edit_link.html", ctx, status=status)


def _field_of(error: str | None) -> str | None:
    head = (error or "").split(":", 1)[0]
    return head if head.startswith("args") else None


__all__ = ["routes"]
