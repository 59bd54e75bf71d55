"""Pure rendering of the e-mails: the card, a reminder and the outcome, each as text and HTML.

Every value is escaped for HTML and stripped of line breaks in headers. A mail's Message-ID is
derived from the approval, the addressee and what it says, so that a post sent again (a retry
after an unknown outcome) is the same message, not a second one; reminders and the outcome
thread under the card (In-Reply-To, References).
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

from gateway.core import rounds
from gateway.core.models import Approval, Outcome, Status
from gateway.plugin import INFO_ONLY, arg_text, shown_deadline

MAX_SUBJECT = 150
MAX_VALUE = 300
MAX_ARGS = 30
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # C0, DEL, C1 (NEL \x85 breaks a header line too)


def one_line(text: str, limit: int = MAX_SUBJECT) -> str:
    """Header-safe text: no line breaks or control characters (no header injection), cut."""
    flat = _CONTROL.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def message_id(approval_id: str, addressee: str, what: str, sender: str) -> str:
    """`<hitl.<approval>.<what>.<addressee hash>@<sender's domain>>`: the same for the same mail."""
    domain = sender.rpartition("@")[2] or "localhost"
    who = hashlib.sha256(addressee.encode()).hexdigest()[:12]
    return f"<hitl.{approval_id}.{what}.{who}@{domain}>"


def when(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _value(value: Any) -> str:
    text = arg_text(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _args(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    items = [(str(k)[:80], _value(v)) for k, v in list(args.items())[:MAX_ARGS]]
    if len(args) > MAX_ARGS:
        items.append(("…", f"and {len(args) - MAX_ARGS} more"))
    return items


def decider(approval: Approval) -> str:
    d = approval.decision
    if d is None:
        return ""
    return "policy" if approval.status is Status.TIMED_OUT else d.shown_as


def _mail(sender: str, to: str, subject: str, mid: str, thread: str | None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = one_line(subject)
    msg["Message-ID"] = mid
    if thread:
        msg["In-Reply-To"] = thread
        msg["References"] = thread
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no auto-replies to this
    return msg


_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def _flat(text: str) -> str:
    """One line of the agent's text: no break or control character that could start a line."""
    return _CONTROL.sub(" ", text)


def quoted(text: str) -> list[str]:
    """The agent's words, each line behind '> ': no line of theirs can pass for the gateway's own
    (an 'Approve: https://…' line of their making sits behind the bar, below the real ones' column)."""
    return ["> " + _flat(line).rstrip() for line in _BREAKS.split(text)]


def _facts_text(approval: Approval) -> list[str]:
    lines = [*quoted(approval.title), ""]
    if approval.summary:
        lines += [*quoted(approval.summary), ""]
    lines.append(_flat(f"Run {approval.run_id} · step {approval.step}"))
    lines += [f"  {_flat(k)}: {_flat(v)}" for k, v in _args(approval.args)]
    change = rounds.change_text(approval)
    if change:
        lines.append(change[0].upper() + change[1:])
    lines.append(f"Deadline: {shown_deadline(approval)}" if approval.deadline else "No deadline")
    return lines


def _facts_html(approval: Approval) -> str:
    esc = html.escape
    rows = "".join(
        f"<tr><th align='left'>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in _args(approval.args)
    )
    parts = [f"<h2>{esc(approval.title)}</h2>"]
    if approval.summary:
        parts.append(f"<p>{esc(approval.summary)}</p>")
    parts.append(f"<p>Run <code>{esc(approval.run_id)}</code> · step <code>{esc(approval.step)}</code></p>")
    if rows:
        parts.append(f"<table cellpadding='4'>{rows}</table>")
    change = rounds.change_text(approval)
    if change:
        parts.append(f"<p><b>{esc(change[0].upper() + change[1:])}</b></p>")
    deadline = f"Deadline: {esc(shown_deadline(approval))}" if approval.deadline else "No deadline"
    parts.append(f"<p>{deadline}</p>")
    return "".join(parts)


def card(
    approval: Approval, sender: str, to: str, links: Mapping[Outcome, str], extend: Mapping[str, str] | None = None
) -> EmailMessage:
    """The card: the question, the facts, one-time Approve and Reject links, and the policy's
    extend links ('+1h' -> url), if any; without links (`links` empty: the addressee may not
    decide), the facts and a line saying so."""
    extend = extend or {}
    if not links:
        return _info_card(approval, sender, to)
    approve, reject = links[Outcome.APPROVE], links[Outcome.REJECT]
    msg = _mail(sender, to, f"Approval needed: {approval.title}", message_id(approval.id, to, "card", sender), None)
    text = [
        *_facts_text(approval),
        "",
        f"Approve: {approve}",
        f"Reject:  {reject}",
        *(f"Extend the deadline {label}: {url}" for label, url in extend.items()),
        "",
        "Each link opens a page where you confirm; nothing is decided until you do. The links are",
        f"yours alone ({to}) and work once. Approval {approval.id}. Lines after '> ' are the agent's words.",
    ]
    msg.set_content("\n".join(text))
    esc = html.escape
    buttons = (
        f"<p><a href='{esc(approve)}'><b>Approve…</b></a> &nbsp; · &nbsp; "
        f"<a href='{esc(reject)}'><b>Reject…</b></a>"
        + "".join(f" &nbsp; · &nbsp; <a href='{esc(url)}'>Extend {esc(label)}…</a>" for label, url in extend.items())
        + "</p>"
    )
    note = (
        f"<p><small>Each link opens a page where you confirm; nothing is decided until you do. The links are"
        f" yours alone ({esc(to)}) and work once. Approval {esc(approval.id)}.</small></p>"
    )
    msg.add_alternative(f"<html><body>{_facts_html(approval)}{buttons}{note}</body></html>", subtype="html")
    return msg


def _info_card(approval: Approval, sender: str, to: str) -> EmailMessage:
    msg = _mail(sender, to, f"For information: {approval.title}", message_id(approval.id, to, "card", sender), None)
    msg.set_content("\n".join([*_facts_text(approval), "", INFO_ONLY, f"Approval {approval.id}."]))
    note = f"<p><i>{html.escape(INFO_ONLY)}</i> Approval {html.escape(approval.id)}.</p>"
    msg.add_alternative(f"<html><body>{_facts_html(approval)}{note}</body></html>", subtype="html")
    return msg


def reminder(approval: Approval, sender: str, to: str, links: Mapping[Outcome, str], number: int) -> EmailMessage:
    """A nudge in the card's thread, with the same links."""
    thread = message_id(approval.id, to, "card", sender)
    mid = message_id(approval.id, to, f"reminder{number}", sender)
    msg = _mail(sender, to, f"Reminder: {approval.title}", mid, thread)
    deadline = f" before {shown_deadline(approval)}" if approval.deadline else ""
    approve, reject = links[Outcome.APPROVE], links[Outcome.REJECT]
    change = rounds.change_text(approval)
    again = f"\n{change[0].upper() + change[1:]}: please vote again.\n" if change else ""
    msg.set_content(
        f"“{_flat(approval.title)}” still needs a decision{deadline}.\n{again}\nApprove: {approve}\nReject:  {reject}\n"
    )
    esc = html.escape
    msg.add_alternative(
        f"<html><body><p>“{esc(approval.title)}” still needs a decision{esc(deadline)}.</p>"
        f"<p><a href='{esc(approve)}'>Approve…</a> · <a href='{esc(reject)}'>Reject…</a></p></body></html>",
        subtype="html",
    )
    return msg


def outcome(approval: Approval, sender: str, to: str) -> EmailMessage:
    """The short mail after a decision, in the card's thread: what, who, when, and why. One per
    decided version (a reason attached later is a new mail, a retry is the same one)."""
    d = approval.decision
    assert d is not None
    head = approval.status.verb.capitalize()
    what = (
        f"{head}: {d.outcome.value} by policy"
        if approval.status is Status.TIMED_OUT
        else f"{head} by {decider(approval)}"
    )
    thread = message_id(approval.id, to, "card", sender)
    mid = message_id(approval.id, to, f"outcome{approval.version}", sender)
    msg = _mail(sender, to, f"{head}: {approval.title}", mid, thread)
    lines = [*quoted(approval.title), "", f"{what} · {when(d.decided_at)}"]
    change = rounds.change_text(approval)
    if change:
        lines.append(change[0].upper() + change[1:])
    if d.reason:
        lines.append(d.reason)
    if d.comment:
        lines += ["", f"Comment: {d.comment}"]
    lines += ["", f"Approval {approval.id}. The links in the first mail no longer decide anything."]
    msg.set_content("\n".join(lines))
    esc = html.escape
    body = [f"<h2>{esc(approval.title)}</h2>", f"<p><b>{esc(what)}</b> · {esc(when(d.decided_at))}</p>"]
    if change:
        body.append(f"<p>{esc(change[0].upper() + change[1:])}</p>")
    if d.reason:
        body.append(f"<p><i>{esc(d.reason)}</i></p>")
    if d.comment:
        body.append(f"<blockquote>{esc(d.comment)}</blockquote>")
    msg.add_alternative(f"<html><body>{''.join(body)}</body></html>", subtype="html")
    return msg
