"""The web inbox: server-rendered pages (Jinja2) to list, read and decide approvals.

A decision here is `service.decide(..., actor="web:<name>", channel="web")`: the same use case
as a chat button, so its SYNC outbox rows update every card of the approval on every channel.
The pages are served by the web sub-application (gateway.http.web.subapp).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from markupsafe import Markup

from gateway.core import extend as extend_rules
from gateway.core import grants, rounds
from gateway.core.errors import GatewayError, StaleRound
from gateway.core.extend import parse_extension
from gateway.core.models import Approval, Outcome, Status
from gateway.http.usecases import CLOCK, METRICS, READS, SERVICE, SIGNER
from gateway.http.web import argsform, argsview, live
from gateway.http.web.auth import PageError, posted_form, render, require
from gateway.http.web.richtext import markdown
from gateway.http.web.runs import run_url
from gateway.http.web.sessions import COOKIES, SESSION_COOKIE, User, current_user
from gateway.http.web.view import pretty, row
from gateway.service import Service
from gateway.service.batch import BATCH_MAX, Batch, BatchItem, ItemResult, decide_each
from gateway.service.commands import Authority
from gateway.telemetry.metrics import CONTENT_TYPE

routes = web.RouteTableDef()
_STATIC = Path(__file__).parent / "static"
LIVE = web.AppKey("live", live.LiveFeed)
_MAX_COMMENT = 2000
MAX_SEARCH = 200  # characters of an inbox search
INBOX_ROWS = 200
BATCH_STALE = "The arguments changed since this list was drawn: open it to look at them. Nothing was recorded."
PICK = "pick:"  # a row's checkbox: `pick:<id>` = the round tag its row was drawn for
STALE_TEXT = "The arguments changed while this page was open: look at them again below. Nothing was recorded."


# ---------------------------------------------------------------- pages


def _status_filter(value: str) -> Status | None:
    if value in ("", "all"):
        return None
    try:
        return Status(value)
    except ValueError:
        raise PageError(400, f"status: must be 'all' or one of {', '.join(s.value for s in Status)}") from None


@routes.get("/")
@require()
async def inbox(request: web.Request, user: User) -> web.Response:
    """Web inbox: approvals oldest first, with SLA countdown, filtered by status, channel and run,
    searched (`q`) in the title, summary, run, step and agent; pending ones can be selected and
    decided together."""
    return render(request, "inbox.html", await _inbox_ctx(request, request.query))


async def _inbox_ctx(request: web.Request, q: Mapping[str, str], **extra: Any) -> dict[str, Any]:
    filters = {
        "status": q.get("status", Status.WAITING.value),
        "channel": q.get("channel", ""),
        "run": q.get("run", ""),
        "q": q.get("q", ""),
    }
    search = filters["q"].strip()
    if len(search) > MAX_SEARCH:
        raise PageError(400, f"q: search for at most {MAX_SEARCH} characters")
    items = await request.config_dict[READS].approvals_by_age(
        status=_status_filter(filters["status"]),
        run_id=filters["run"].strip() or None,
        channel=filters["channel"].strip() or None,
        limit=INBOX_ROWS,
        search=search or None,
    )
    now, signer = request.config_dict[CLOCK].now(), request.config_dict[SIGNER]
    user = current_user(request)
    behalf: dict[str, str] = {}  # approval id -> the delegator the user would decide it for
    may = await _may_decide(request.config_dict[SERVICE], user.actor, behalf) if user and user.can_decide else _nobody
    # a row's checkbox carries the round its args were drawn for, as the approval page's form does
    rows = [{**row(a, now), "round": rounds.tag(signer, a), "pickable": may(a)} for a in items]
    rows = [{**r, "behalf": behalf.get(r["a"].id)} for r in rows]
    return {
        "rows": rows,
        "pending": any(r["pickable"] for r in rows),
        "filters": filters,
        "statuses": [s.value for s in Status],
        "batch_max": BATCH_MAX,
        "results": [],
        "query": request.query_string,
        **extra,
    }


def _nobody(approval: Approval) -> bool:
    return False


async def _may_decide(service: Service, actor: str, behalf: dict[str, str] | None = None) -> Callable[[Approval], bool]:
    """Whether `actor` may decide an approval alone now, themselves or for someone who
    delegated to them (noted in `behalf`): its row offers a checkbox only then (a convenience:
    every decision is checked again when it is made)."""
    who = service.authorizer.actor(actor, Authority.APPROVER)
    now = service.clock.now()
    delegations = await service.decisions.delegations.to(who, now)
    claimed = await service.authorizer.claimed(who)

    def may(approval: Approval) -> bool:
        if approval.status.final:
            return False
        try:
            via = service.authorizer.authorize(
                Authority.APPROVER, who, approval, claimed=claimed, delegations=delegations, now=now
            )
        except GatewayError:
            return False
        if via is not None and behalf is not None:
            behalf[approval.id] = via.delegator
        return True

    return may


@routes.post("/")
@require("approver")
async def decide_batch(request: web.Request, user: User) -> web.Response:
    """Approve or reject the selected approvals together (approvers; CSRF token required): each
    is its own decision as web:<name>, with every check it would get alone on its page (who may
    decide it, the round its row was drawn for, quorum, require_reason); the result per item."""
    form = posted_form(request)
    comment = form.get("comment", "").strip()
    outcome, grant = _form_outcome(form.get("outcome", ""), comment)
    if grant is not None:
        raise PageError(400, "outcome: a standing grant is made on an approval's own page, one at a time")
    picks = [(key[len(PICK) :], seen) for key, seen in form.items() if key.startswith(PICK)]
    if not picks:
        raise PageError(400, "Select at least one approval, then approve or reject.")
    if len(picks) > BATCH_MAX:
        raise PageError(400, f"At most {BATCH_MAX} approvals at once; {len(picks)} were selected.")
    items = [BatchItem(aid, outcome, comment or None, seen or rounds.ORIGINAL) for aid, seen in picks]
    service = request.config_dict[SERVICE]
    results = await decide_each(service, Batch(user.actor, Authority.APPROVER, "web"), items)
    shown = [await _result_view(request, r) for r in results]
    # posted to the list it was drawn from (its query: the filters), which is drawn again below
    return render(request, "inbox.html", await _inbox_ctx(request, request.query, results=shown, outcome=outcome.value))


async def _result_view(request: web.Request, result: ItemResult) -> dict[str, Any]:
    """What the page says of one item: its title (when it exists) and what happened to it."""
    approval = result.approval or await request.config_dict[READS].approval(result.approval_id)
    if result.error is not None:
        text = BATCH_STALE if isinstance(result.error, StaleRound) else result.error.message
    elif approval is not None and approval.status.final:
        text = approval.status.value.replace("_", " ")
    else:
        text = "your vote is recorded; it waits for more approvals"
    return {"id": result.approval_id, "ok": result.ok, "a": approval, "text": text}


@routes.get("/approvals/{id}")
@require()
async def approval_page(request: web.Request, user: User) -> web.Response:
    """One approval in the order a person decides: title, summary, args, the decision form,
    then the history (`after`: the approval just decided, named in a notice)."""
    service = request.config_dict[SERVICE]
    approval = await service.get(request.match_info["id"])
    ctx = await _approval_ctx(request, approval, user)
    return render(request, "approval.html", {**ctx, "decided": await _decided(request)})


async def _decided(request: web.Request) -> dict[str, Any] | None:
    """The approval named by `?after=` (the one decided before coming here), if any, with its
    title as it stands now."""
    after = request.query.get("after", "")
    found = await request.config_dict[READS].approval(after) if 0 < len(after) <= 64 else None
    return {"a": found, "title": argsview.plain_title(found)} if found is not None else None


async def _next_pending(request: web.Request, decided: Approval, user: User) -> str:
    """Where to go after deciding `decided`: the next approval waiting in the inbox's order
    (oldest first) after it that `user` may decide and has not voted on yet, else the oldest
    such one, else the inbox."""
    waiting = await request.config_dict[READS].approvals_by_age(status=Status.WAITING, limit=200)
    may = await _may_decide(request.config_dict[SERVICE], user.actor)

    def open_to_user(a: Approval) -> bool:
        return a.id != decided.id and not any(v.approver == user.actor for v in a.votes) and may(a)

    others = [a for a in waiting if open_to_user(a)]
    here = (decided.created_at, decided.id)
    later = [a for a in others if (a.created_at, a.id) > here]
    ahead = later or others
    return f"/approvals/{ahead[0].id}?after={decided.id}" if ahead else "/"


async def _neighbours(request: web.Request, approval: Approval) -> tuple[str | None, str | None]:
    """The waiting approvals just before and after `approval` in the inbox's order (oldest
    first): the page's `rel="prev"` and `rel="next"` links, which `j` and `k` follow."""
    waiting = await request.config_dict[READS].approvals_by_age(status=Status.WAITING, limit=200)
    here = (approval.created_at, approval.id)
    before = [a.id for a in waiting if (a.created_at, a.id) < here]
    after = [a.id for a in waiting if (a.created_at, a.id) > here]
    return (before[-1] if before else None), (after[0] if after else None)


async def _approval_ctx(request: web.Request, approval: Approval, user: User, **form: Any) -> dict[str, Any]:
    now = request.config_dict[CLOCK].now()
    prev_id, next_id = await _neighbours(request, approval)
    detail = await request.config_dict[READS].detail(approval.id)
    view = row(approval, now)
    submitted = form.get("submitted")
    edit_fields = argsform.render(argsform.fields(approval), submitted, form.get("error_field"))
    return {
        "edit_fields": Markup(edit_fields),  # escaped by argsform.render
        "change": rounds.change_text(approval) or "",
        # the form approves this round's args only; typed input kept after an error keeps its round
        "round": form.get("round") or rounds.tag(request.config_dict[SIGNER], approval),
        "extend_choices": [extend_rules.label(d) for d in extend_rules.choices(approval)],
        "require_reason": approval.policy.require_reason,
        # "Approve and allow for 1h": one person may grant only where one person decides
        "grant_offers": grants.offers(approval.policy),
        "args_error": (form.get("error_field") or "").startswith("args"),  # shown above the fields
        **view,
        "self_row": view,
        "summary_html": markdown(argsview.summary_text(approval)) if approval.summary else "",
        "arg_rows": argsview.arg_rows(approval),
        "edit_state": argsview.edit_state(approval),
        "title_parts": argsview.title_parts(approval),
        "plain_title": argsview.plain_title(approval),
        "outcome_text": argsview.outcome_heading(approval),
        "run_link": run_url(approval.run_id, approval.namespace, explicit=True),
        "prev_id": prev_id,
        "next_id": next_id,
        "events": [{"e": e, "data": pretty(e.data) if e.data else ""} for e in detail.events],
        "made_grant": next((e.data for e in detail.events if e.kind == "approved" and "grant_for" in e.data), None),
        "cards": detail.cards,
        "deliveries": detail.deliveries,
        "job": detail.job,
        "may_decide": user.can_decide and not approval.status.final,
        "decided": None,  # the approval decided just before (the page's `?after=`)
        "form_error": form.get("error", ""),
        "comment": form.get("comment", ""),
    }


@routes.post("/approvals/{id}/decision")
@require("approver")
async def decide(request: web.Request, user: User) -> web.StreamResponse:
    """Approve, or reject with a comment, as web:<name> (approvers only; CSRF token required).
    A decision that cannot be taken re-renders the page with the error next to the form and
    what was typed kept; a page drawn before another approver changed the args (its `round`)
    comes back drawn anew, the comment kept but not the arg fields, which were the old args and
    would silently undo that change."""
    service, form = request.config_dict[SERVICE], posted_form(request)
    comment = form.get("comment", "").strip()
    current = await service.get(request.match_info["id"])
    try:
        outcome, grant = _form_outcome(form.get("outcome", ""), comment)
        # The edit fields travel with an approve (unchanged ones are no edit: the same args hash).
        args = argsform.read(current, form) if outcome is Outcome.APPROVE else None
        approval = await service.decide(
            current.id,
            outcome,
            user.actor,
            comment=comment or None,
            channel="web",
            args=args,
            seen=form.get("round") or rounds.ORIGINAL,  # a page without one predates round tags
            grant=grant,
        )
    except (PageError, GatewayError) as exc:
        status = exc.status
        if status >= 500:
            raise
        current = await service.get(current.id)
        field = exc.details.get("field") if isinstance(exc, GatewayError) else None
        kept = {k: v for k, v in form.items() if k.startswith(argsform.PREFIX)}
        message, seen_round = exc.message, form.get("round") or rounds.ORIGINAL
        if isinstance(exc, StaleRound):
            kept, field, message, seen_round = {}, None, STALE_TEXT, ""
        ctx = await _approval_ctx(
            request,
            current,
            user,
            error=message,
            comment=comment[:_MAX_COMMENT],
            submitted=kept,
            error_field=field,
            round=seen_round,
        )
        return render(request, "approval.html", ctx, status=status)
    raise web.HTTPSeeOther(await _next_pending(request, approval, user))


@routes.post("/approvals/{id}/extend")
@require("approver")
async def extend(request: web.Request, user: User) -> web.StreamResponse:
    """Extend the deadline by one of the policy's `extend` durations (approvers; CSRF token required)."""
    service, form = request.config_dict[SERVICE], posted_form(request)
    approval_id = request.match_info["id"]
    try:
        duration = parse_extension(form.get("duration", "").lstrip("+"))
        await service.extend(approval_id, duration, user.actor, channel="web", seen=_seen_extensions(form))
    except GatewayError as exc:
        if exc.status >= 500:
            raise
        ctx = await _approval_ctx(request, await service.get(approval_id), user, error=exc.message)
        return render(request, "approval.html", ctx, status=exc.status)
    raise web.HTTPSeeOther(f"/approvals/{approval_id}")


def _seen_extensions(form: Mapping[str, str]) -> int | None:
    """The extensions the page showed (its hidden field): a second submit of the same page, or a
    page drawn before another approver's extension, then extends nothing. None from a form
    without it (a page drawn by an older gateway)."""
    value = form.get("extensions", "")
    if not value:
        return None
    # ASCII digits only: str.isdigit also says yes to '²' or '①', which int() refuses (a 500)
    if not (value.isascii() and value.isdigit()) or len(value) > 4:
        raise PageError(400, "extensions: must be the number of extensions the page showed")
    return int(value)


def _form_outcome(value: str, comment: str) -> tuple[Outcome, str | None]:
    """The outcome pressed, and the grant of an "Approve and allow for 1h" button
    (`approve:1h`: checked against the policy by the use case, as the API's `grant`)."""
    value, _, grant = value.partition(":")
    try:
        outcome = Outcome(value)
    except ValueError:
        raise PageError(400, "outcome: must be approve or reject") from None
    if len(comment) > _MAX_COMMENT:
        raise PageError(400, f"comment: at most {_MAX_COMMENT} characters")
    return outcome, grant or None  # a reason to reject is the policy's call (`require_reason`), as on every path


@routes.get("/static/web.css")
async def stylesheet(request: web.Request) -> web.FileResponse:
    """The inbox stylesheet."""
    return web.FileResponse(_STATIC / "web.css", headers={"Cache-Control": "public, max-age=3600"})


@routes.get("/static/keys.js")
async def keys_script(request: web.Request) -> web.FileResponse:
    """Keyboard shortcuts: j/k to move, a approve, r reject, e edit, ? for help."""
    return web.FileResponse(_STATIC / "keys.js", headers={"Cache-Control": "public, max-age=3600"})


@routes.get("/static/live.js")
async def live_script(request: web.Request) -> web.FileResponse:
    """The pages' only script: ticking SLA countdowns, and live regions refreshed on a change."""
    return web.FileResponse(_STATIC / "live.js", headers={"Cache-Control": "public, max-age=3600"})


@routes.get("/live")
@require()
async def live_stream(request: web.Request, user: User) -> web.StreamResponse:
    """Server-sent events: `change` whenever the gateway recorded something new, while the
    session that opened the stream lasts (at most `[web] live_streams_per_user` per user)."""
    token, cookies = request.cookies.get(SESSION_COOKIE, ""), request.config_dict[COOKIES]

    async def signed_in() -> bool:
        return await cookies.resolve(token) is not None

    return await live.stream(request, request.config_dict[LIVE], user.actor, signed_in)


@routes.get("/metrics")
async def metrics(request: web.Request) -> web.Response:
    """Prometheus metrics (text format)."""
    gauges = await request.config_dict[READS].gauges()
    body = request.config_dict[METRICS].render(gauges)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})
