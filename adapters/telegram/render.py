"""Pure rendering of Telegram cards in HTML parse mode. Every user-given string is escaped.

A card must fit 4096 characters after entity parsing; we measure the HTML source (always at
least as long), and shrink long values, then the summary, until it fits.

Keyboards are the Bot API's JSON (`{"inline_keyboard": [[button, ...], ...]}`), keys in the order
python-telegram-bot writes them, not PTB objects: `api.py` sends them as they are.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from typing import Any

from adapters.telegram import callback
from gateway.core import extend as extend_rules
from gateway.core import grants, rounds
from gateway.core.durations import format_duration, humanize
from gateway.core.models import Approval, OnTimeout, Outcome, Source, Status
from gateway.plugin import INFO_ONLY, PressOutcome, PressResult, already_text, shown_deadline

MAX_TEXT = 4096
MAX_TITLE = 256
MAX_ARGS = 20
# (summary, arg value, comment) limits, tried in turn; a value limit of 0 drops the args table.
_SHRINK = ((1500, 200, 1000), (1000, 80, 1000), (400, 40, 500), (120, 16, 300), (0, 8, 200), (0, 0, 100))
_TAG = re.compile(r"<[^>]*>")
_HEAD = {
    Status.APPROVED: "✅ <b>Approved</b>",
    Status.REJECTED: "❌ <b>Rejected</b>",
    Status.TIMED_OUT: "⌛ <b>Timed out</b>",
    Status.CANCELLED: "🚫 <b>Cancelled</b>",
}


def esc(text: str) -> str:
    return html.escape(text, quote=False)


def cut(text: str, limit: int) -> str:
    """Shorten plain text (before escaping, so no entity is split) with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def args_table(args: dict[str, Any], value_limit: int) -> str:
    """A compact `<pre>` table: one `key  value` line per argument, long values cut."""
    if not args:
        return ""
    items = list(args.items())
    shown = items[:MAX_ARGS]
    width = min(16, max(len(str(k)) for k, _ in shown))
    lines = [f"{cut(str(k), 16):<{width}}  {cut(_value(v), value_limit)}" for k, v in shown]
    if len(items) > len(shown):
        lines.append(f"… and {len(items) - len(shown)} more")
    return "<pre>" + esc("\n".join(lines)) + "</pre>"


def timeout_words(approval: Approval, now: datetime) -> str:
    """The deadline and what happens then, for people: 'auto-reject in 30 min'."""
    if approval.deadline is None:
        return "no deadline"
    left = approval.deadline - now
    if left.total_seconds() <= 0:
        return "deadline passed, the policy decides now"
    policy = approval.policy
    span = humanize(left)
    if policy.on_timeout is OnTimeout.ESCALATE and approval.escalations == 0:
        return f"escalates to {', '.join(policy.escalate_to)} in {span}"
    outcome = policy.after_escalation if approval.escalations else Outcome(policy.on_timeout.value)
    return f"auto-{outcome.value} in {span}"


def quorum_words(approval: Approval) -> str:
    n, required = approval.approvals_count, approval.policy.quorum
    return f"{n} of {required} approval{'s' if required != 1 else ''}"


def _status_lines(approval: Approval, now: datetime, note_limit: int, decides: bool) -> list[str]:
    change = rounds.change_text(approval)
    if approval.status is Status.WAITING:
        deadline = f"{esc(shown_deadline(approval))} · " if approval.deadline else ""
        lines = [f"⏳ {deadline}{esc(timeout_words(approval, now))}"]
        if approval.extensions:
            lines[0] += f" (extended {approval.extensions}×)"
        if approval.policy.quorum > 1:
            lines.append(f"👥 {quorum_words(approval)}")
        if change:
            lines.append(f"✏️ {esc(cut(change, 300))}")
        if not decides:
            lines.append(f"ℹ️ {esc(INFO_ONLY)}")
        return lines
    d = approval.decision
    head = _HEAD.get(approval.status, esc(approval.status.value))
    if d is None:
        return [head]
    if approval.status is Status.TIMED_OUT:
        lines = [f"{head}: {esc(d.outcome.value)}ed by policy · {esc(when(d.decided_at))}"]
    elif d.source is Source.GRANT:  # nobody pressed anything now: say whose standing grant it was
        lines = [f"{head} under standing grant <code>{esc(d.decided_by)}</code> · {esc(when(d.decided_at))}"]
    else:
        lines = [f"{head} by {esc(d.shown_as)} · {esc(when(d.decided_at))}"]
    if change:
        lines.append(f"✏️ {esc(cut(change, 300))}")
    if d.reason:
        lines.append(f"<i>{esc(cut(d.reason, min(300, note_limit)))}</i>")
    if d.comment:
        lines.append(f"💬 {esc(cut(d.comment, note_limit))}")
    return lines


def _compose(
    approval: Approval, now: datetime, summary_limit: int, value_limit: int, note_limit: int, decides: bool
) -> str:
    parts: list[str] = []
    if approval.status is Status.WAITING:
        parts.append("🔔 <b>Approval needed</b>")
    parts.append(f"<b>{esc(cut(approval.title, MAX_TITLE))}</b>")
    if approval.summary and summary_limit:
        parts.append(esc(cut(approval.summary, summary_limit)))
    parts.append(f"Run <code>{esc(cut(approval.run_id, 80))}</code> · step <code>{esc(cut(approval.step, 80))}</code>")
    table = args_table(approval.args, value_limit) if value_limit else ""
    if table:
        parts.append(table)
    parts.extend(_status_lines(approval, now, note_limit, decides))
    parts.append(f"<i>id {esc(approval.id)}</i>")
    return "\n".join(parts)


def render_card(approval: Approval, now: datetime, decides: bool = True) -> str:
    """The card text: the question while waiting, the outcome (who, when, comment) once decided.
    The decider is shown as the person (`[people]`), their Telegram name ('@alice'), or the id.
    Where nobody may decide (`decides` false), a waiting card says so (and has no keyboard)."""
    text = ""
    for limits in _SHRINK:
        text = _compose(approval, now, *limits, decides)
        if len(text) <= MAX_TEXT:
            return text
    return _plain_fallback(text)


def _plain_fallback(text: str) -> str:
    """Still too long (absurd titles, ids or names full of '&' and '<'): the same words without
    markup, cut so that the HTML stays valid. Never cut HTML itself: Telegram refuses it."""
    out: list[str] = []
    size = 0
    for ch in html.unescape(_TAG.sub("", text)):
        piece = esc(ch)
        if size + len(piece) > MAX_TEXT - 1:
            return "".join(out) + "…"
        out.append(piece)
        size += len(piece)
    return "".join(out)


Button = dict[str, str]
Keyboard = dict[str, list[list[Button]]]


def button(text: str, callback_data: str) -> Button:
    return {"callback_data": callback_data, "text": text}


def url_button(text: str, url: str) -> Button:
    return {"text": text, "url": url}


def markup(rows: list[list[Button]]) -> Keyboard:
    return {"inline_keyboard": rows}


def keyboard(approval: Approval, signer: rounds.Macs, decides: bool = True) -> Keyboard | None:
    """Approve (bound to this round's args) and Reject while waiting; no keyboard once decided,
    nor where nobody may decide."""
    if approval.status.final or not decides:
        return None
    approve = "✅ Approve"
    if approval.policy.quorum > 1:
        approve += f" ({approval.approvals_count}/{approval.policy.quorum})"
    rows = [
        [
            button(approve, callback.build(signer, approval.id, Outcome.APPROVE, rounds.tag(signer, approval))),
            button("❌ Reject", callback.build(signer, approval.id, Outcome.REJECT)),
        ]
    ]
    if offered := [g for g in grants.offers(approval.policy) if len(g) <= callback.MAX_DURATION]:
        tag = rounds.tag(signer, approval)  # "Approve · 1h": approve, and allow the same for 1h
        rows.append(
            [
                button(f"✅ Approve · {grants.label(g)}", callback.build_grant(signer, approval.id, g, tag))
                for g in offered
            ]
        )
    if approval.editable:  # the form is a web page: the presser gets a one-time link to it
        rows.append([button("✏️ Edit", callback.build_action(signer, approval.id, "e"))])
    extend = [
        button(f"⏳ {extend_rules.label(d)}", callback.build_action(signer, approval.id, "x" + format_duration(d)))
        for d in extend_rules.choices(approval)
        if len(format_duration(d)) <= callback.MAX_DURATION
    ]
    if extend:
        rows.append(extend)
    return markup(rows)


def edit_link_text(approval: Approval) -> str:
    """The private message that carries the edit link (its button opens the form)."""
    return f"✏️ Edit <b>{esc(cut(approval.title, MAX_TITLE))}</b> before approving: the link works once, for you only."


def render_reminder(approval: Approval, now: datetime) -> str:
    """A nudge; when an approver changed the args, what changed (the votes restarted on them)."""
    text = f"⏰ Reminder: <b>{esc(cut(approval.title, MAX_TITLE))}</b> is waiting · {esc(timeout_words(approval, now))}"
    change = rounds.change_text(approval)
    return text + (f"\n✏️ {esc(cut(change, 300))}: please vote again" if change else "")


def reason_prompt(user_id: int, who: str) -> str:
    """A text mention (so a selective ForceReply targets exactly this user) and the question."""
    mention = f'<a href="tg://user?id={int(user_id)}">{esc(who)}</a>'
    return f"{mention}, why reject? Reply to this message with a reason within 10 min."


def answer_text(verdict: PressOutcome, *, asks_reason: bool = False) -> str:
    """The short toast shown to the presser (at most 200 characters), from what was committed."""
    if verdict.result is PressResult.REJECTED and asks_reason:
        return "Rejected. Reply to my question with a reason, if you like."
    return cut(verdict.text(), 200)


_OWN = {Status.APPROVED: PressResult.APPROVED, Status.REJECTED: PressResult.REJECTED}


def again_text(verdict: PressOutcome, actor: str) -> str:
    """A redelivered vote's answer: what its first delivery said when this presser's vote decided
    ("Approved"), else what is true now ("Already approved by @bob", "You already approved…")."""
    a = verdict.approval
    d = a.decision if a is not None else None
    if verdict.result is PressResult.ALREADY_DECIDED and a is not None and d is not None and d.decided_by == actor:
        return PressOutcome(_OWN[a.status]).text() if a.status in _OWN else answer_text(verdict)
    return answer_text(verdict)


def state_text(approval: Approval | None, now: datetime) -> str:
    """The approval as it is now, for a press answered again (a redelivery): 'Already approved by
    @alice', 'Waiting for a decision · auto-reject in 30 min'."""
    if approval is None:
        return PressOutcome(PressResult.UNKNOWN).text()
    if approval.status.final:
        return cut(already_text(approval), 200)
    return cut(f"Waiting for a decision · {timeout_words(approval, now)}", 200)


def reason_markup() -> dict[str, object]:
    """ForceReply, selective: the presser's client (only theirs) opens a reply box."""
    return {"force_reply": True, "input_field_placeholder": "Reason for rejecting", "selective": True}
