"""Pure Adaptive Card rendering (schema 1.5, Universal Actions) of approval cards.

One card, three views:
- the shared card everyone sees (posted, and PUT on every outcome): the request and, while it
  waits, one "Decide" button; its `refresh` (verb `refresh`, `userIds` the approvers' Teams ids)
  makes Teams fetch each listed person's own view as soon as they look at it;
- an approver's view (the answer to `refresh` or to their press): Approve, Reject, "Reject with
  reason…" (an `Input.Text`), and "Edit & approve…" (one input per editable arg) where the
  suspend allows edits;
- anyone else's view: the request, without buttons.
Once decided the card shows the outcome and has no actions and no refresh.

Text is shown through TextBlocks and FactSets, whose Markdown subset is escaped: an agent's
title cannot hide a link. Teams refuses a message over about 28 KB; a card over `CARD_MAX`
is drawn compact (a shortened summary, the first arguments, a link to the whole request).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gateway.core import extend as extend_rules
from gateway.core import grants, rounds
from gateway.core.durations import format_duration
from gateway.core.models import Approval, Outcome, Source, Status
from gateway.plugin import INFO_ONLY, arg_text, argsform, shown_deadline

CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_MAX = 26_000  # bytes of JSON: under the Bot Connector's ~28 KB for the whole activity
USER_IDS_MAX = 60  # Teams: at most 60 people get their own view
TEXT_MAX = 4_000
FACTS_MAX = 20
FACT_MAX = 600
REASON_INPUT = "reason"
REASON_MAX = 2_000
COMPACT_SUMMARY = 600
COMPACT_FACTS = 3

Element = dict[str, Any]
# The Markdown an Adaptive Card renders: emphasis, links, and lists or headings at a line's start.
_MARKDOWN = re.compile(r"([\\`*_\[\]()~])")
_LINE_START = re.compile(r"^([ \t]*)([-+#>]|[0-9]+\.)", re.MULTILINE)


def escape(text: str) -> str:
    """Backslash-escape the Markdown a TextBlock or a fact would render: an agent's text cannot
    make a link, emphasis or a list."""
    return _LINE_START.sub(_unlist, _MARKDOWN.sub(r"\\\1", text))


def _unlist(m: re.Match[str]) -> str:
    mark = m.group(2)
    return m.group(1) + (mark[:-1] + "\\." if mark.endswith(".") else "\\" + mark)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(text: str, **style: Any) -> Element:
    return {"type": "TextBlock", "text": text, "wrap": True, **style}


@dataclass(frozen=True, slots=True)
class View:
    """Who the card is drawn for. `ref` is the signed approval reference every action carries,
    `seen` the round tag of the args shown (an Approve drawn for older args is refused);
    `buttons`: the approver's actions; `user_ids`: who gets their own view (`refresh.userIds`);
    `decides`: whether anyone may decide on this channel; `notice`: a line for this person;
    `page`: the web page of the request (the compact card links to it)."""

    ref: str
    seen: str = ""
    buttons: bool = False
    decides: bool = True
    user_ids: tuple[str, ...] = ()
    notice: str | None = None
    page: str = ""


def facts(args: dict[str, Any], limit: int = FACTS_MAX) -> list[Element]:
    items = list(args.items())
    shown = items if len(items) <= limit else items[: limit - 1]
    out = [{"title": escape(cut(str(k), 100)), "value": escape(cut(arg_text(v), FACT_MAX))} for k, v in shown]
    if len(items) > len(shown):
        out.append({"title": "…", "value": f"and {len(items) - len(shown)} more"})
    return out


def context_line(approval: Approval) -> str:
    parts = [f"Run {escape(approval.run_id)}", f"Step {escape(approval.step)}"]
    parts.append(f"Deadline {shown_deadline(approval)}" if approval.deadline else "No deadline")
    if approval.extensions:
        parts[-1] += f" (extended {approval.extensions}×)"
    parts.append(f"Policy {escape(approval.policy.name)}")
    if approval.policy.quorum > 1:
        parts.append(progress(approval))
    return " · ".join(parts)


def progress(approval: Approval) -> str:
    return f"{approval.approvals_count} of {approval.policy.quorum} approvals"


def outcome_text(approval: Approval) -> str:
    d = approval.decision
    if d is None:
        return ""
    at = d.decided_at.strftime("%Y-%m-%d %H:%M UTC")
    who = escape(d.shown_as)
    if approval.status is Status.TIMED_OUT or d.source is Source.POLICY:
        head = f"⌛ **Timed out**: {'approved' if d.outcome is Outcome.APPROVE else 'rejected'} by policy"
    elif approval.status is Status.CANCELLED:
        head = f"🚫 **Cancelled** by {who}"
    elif d.source is Source.GRANT:
        head = f"✅ **Approved** under standing grant {escape(d.decided_by)}"
    elif d.outcome is Outcome.APPROVE:
        head = f"✅ **Approved** by {who}"
    else:
        head = f"❌ **Rejected** by {who}"
    lines = [f"{head} · {at}"]
    if d.reason:
        lines.append(escape(cut(d.reason, 500)))
    if d.comment:
        lines.append("“" + escape(cut(d.comment, REASON_MAX)) + "”")
    return "\n\n".join(lines)


def _execute(title: str, verb: str, data: dict[str, Any], **more: Any) -> Element:
    return {"type": "Action.Execute", "title": title, "verb": verb, "data": data, **more}


def _reason_card(approval: Approval, ref: str) -> Element:
    return {
        "type": "AdaptiveCard",
        "body": [
            {
                "type": "Input.Text",
                "id": REASON_INPUT,
                "label": "Why reject?",
                "isMultiline": True,
                "isRequired": True,
                "maxLength": REASON_MAX,
                "errorMessage": "Please write a reason.",
            }
        ],
        "actions": [_execute("Reject", "reject", {"ref": ref}, style="destructive", associatedInputs="auto")],
    }


def _input(f: argsform.Field) -> Element:
    label = f.name + (" (JSON)" if f.is_json else "")
    base: Element = {"id": f.input_name, "label": cut(label, 200)}
    if f.description:
        base["placeholder"] = cut(f.description, 200)
    if f.options:
        choices = [{"title": cut(label, 200), "value": value} for value, label in f.options[:100]]
        return {"type": "Input.ChoiceSet", **base, "choices": choices, "value": f.value, "style": "compact"}
    if f.is_number:
        el: Element = {"type": "Input.Number", **base, "value": float(f.value) if f.value else None}
        if el["value"] is not None and not f.is_decimal and float(f.value).is_integer():
            el["value"] = int(float(f.value))
        for key, bound in (("min", f.minimum), ("max", f.maximum)):
            if bound is not None:
                el[key] = bound
        return {k: v for k, v in el.items() if v is not None}
    return {"type": "Input.Text", **base, "value": cut(f.value, 3000), "isMultiline": f.is_json or "\n" in f.value}


def _edit_card(approval: Approval, view: View) -> Element:
    inputs = [_input(f) for f in argsform.fields(approval)[:FACTS_MAX]]
    data = {"ref": view.ref, "seen": view.seen}
    return {
        "type": "AdaptiveCard",
        "body": inputs,
        "actions": [_execute("Approve with these values", "edit", data, style="positive", associatedInputs="auto")],
    }


def actions(approval: Approval, view: View, compact: bool = False) -> list[Element]:
    """The approver's actions while the approval waits (a compact card edits on the web inbox)."""
    approve = _execute("Approve", "approve", {"ref": view.ref, "seen": view.seen}, style="positive")
    approve["associatedInputs"] = "none"
    out = [approve]
    for g in grants.offers(approval.policy):  # "Approve · 1h": approve, and allow the same for 1h
        data = {"ref": view.ref, "seen": view.seen, "grant": g}
        out.append(_execute(f"Approve · {grants.label(g)}", "grant", data, associatedInputs="none"))
    if not approval.policy.require_reason:  # a reason is required: only the form that asks for one
        out.append(_execute("Reject", "reject", {"ref": view.ref}, style="destructive", associatedInputs="none"))
    out.append({"type": "Action.ShowCard", "title": "Reject with reason…", "card": _reason_card(approval, view.ref)})
    for d in extend_rules.choices(approval):
        data = {"ref": view.ref, "by": format_duration(d)}
        out.append(_execute(extend_rules.label(d), "extend", data, associatedInputs="none"))
    if approval.editable and argsform.fields(approval) and not compact:
        out.append({"type": "Action.ShowCard", "title": "Edit & approve…", "card": _edit_card(approval, view)})
    return out


def _voted(approval: Approval, actor: str | None) -> bool:
    return actor is not None and any(v.approver == actor and v.outcome is Outcome.APPROVE for v in approval.votes)


def card(approval: Approval, view: View, actor: str | None = None, *, compact: bool = False) -> Element:
    """The card for `view` (`actor`: the canonical identity it is drawn for, if any)."""
    title = escape(cut(approval.title or "Approval requested", 300))
    body: list[Element] = [_text(title, weight="Bolder", size="Medium")]
    if approval.summary:
        summary = cut(approval.summary, COMPACT_SUMMARY if compact else TEXT_MAX)
        body.append(_text(escape(summary)))
    shown = facts(approval.current_args, COMPACT_FACTS + 1 if compact else FACTS_MAX)  # edits included
    if shown:
        body.append({"type": "FactSet", "facts": shown})
    if compact:
        linked = view.page.startswith(("https://", "http://"))
        where = f"[the whole request]({view.page})" if linked else "the web inbox"
        body.append(_text(f"Too long for Teams: a shortened card; see {where}.", isSubtle=True, size="Small"))
    body.append(_text(context_line(approval), isSubtle=True, size="Small"))
    change = rounds.change_text(approval, lambda identity, name: escape(name), lambda t: escape(cut(t, 1000)))
    if change:
        body.append(_text(f"✏️ {cut(change, 1500)}"))
    if view.notice:
        body.append(_text(escape(cut(view.notice, 500)), color="Attention" if "not" in view.notice else "Good"))
    out: Element = {
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.5",
        "body": body,
    }
    if approval.status.final:
        body.append(_text(outcome_text(approval)))
        return out
    if not view.decides:
        body.append(_text(escape(INFO_ONLY), isSubtle=True))
        return out
    if view.buttons and _voted(approval, actor):
        body.append(_text(f"You approved: {progress(approval)}.", color="Good"))
    elif view.buttons:
        out["actions"] = actions(approval, view, compact)
    else:
        out["actions"] = [_execute("Decide…", "refresh", {"ref": view.ref})]
    out["refresh"] = {
        "action": _execute("Refresh", "refresh", {"ref": view.ref}),
        "userIds": list(view.user_ids[:USER_IDS_MAX]),
    }
    return out


def size(element: Element) -> int:
    return len(json.dumps(element, ensure_ascii=False, separators=(",", ":")).encode())


def fitted(approval: Approval, view: View, actor: str | None = None) -> Element:
    """The card, or its compact form when the whole one would be over CARD_MAX."""
    full = card(approval, view, actor)
    return full if size(full) <= CARD_MAX else card(approval, view, actor, compact=True)


def attachment(element: Element) -> Element:
    return {"contentType": CONTENT_TYPE, "content": element}


def message(approval: Approval, element: Element) -> Element:
    """The activity that carries the card (a post, or a PUT of the same activity)."""
    return {"type": "message", "summary": summary(approval), "attachments": [attachment(element)]}


def summary(approval: Approval) -> str:
    """The notification's text."""
    title = cut(approval.title or "Approval requested", 200)
    d = approval.decision
    if d is None:
        return f"Approval needed: {title}"
    return f"{title}: {approval.status.verb} by {'policy' if d.source is Source.POLICY else d.shown_as}"


def reminder(approval: Approval) -> Element:
    deadline = f" before {shown_deadline(approval)}" if approval.deadline else ""
    text = f"🔔 Reminder: “{escape(cut(approval.title, 300))}” still needs a decision{deadline}."
    return {"type": "message", "text": text, "textFormat": "markdown"}


def card_response(element: Element) -> Element:
    """The invoke's answer that replaces the card for the presser."""
    return {"statusCode": 200, "type": CONTENT_TYPE, "value": element}


def message_response(text: str) -> Element:
    """The invoke's answer that shows the presser a message and leaves the card as it is."""
    return {"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": cut(text, 500)}


def error_response(status: int, code: str, text: str) -> Element:
    return {"statusCode": status, "type": "application/vnd.microsoft.error", "value": {"code": code, "message": text}}


__all__ = [
    "CARD_MAX",
    "CONTENT_TYPE",
    "REASON_INPUT",
    "View",
    "card",
    "card_response",
    "error_response",
    "fitted",
    "message",
    "message_response",
    "reminder",
]
