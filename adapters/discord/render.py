"""Pure rendering of approval cards as Discord messages: one embed and buttons.

Every text is escaped for Discord's markdown and cut to its limits: content 2000; an embed's
title 256, description 4096, at most 25 fields (name 256, value 1024), footer 2048 and 6000
characters in all; at most 5 action rows of 5 buttons, a label 80, a `custom_id` 100.
Mentions are shown but never notify anyone (`allowed_mentions` parses none).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from gateway.core import extend as extend_rules
from gateway.core import grants, rounds
from gateway.core.durations import format_duration
from gateway.core.models import Approval, Decision, Outcome, Source, Status
from gateway.plugin import INFO_ONLY, arg_text, deadline_beside, decider_text

CONTENT_MAX = 2000
TITLE_MAX = 256
DESCRIPTION_MAX = 4096
FIELDS_MAX = 25
FIELD_NAME_MAX = 256
FIELD_VALUE_MAX = 1024
FOOTER_MAX = 2048
EMBED_TOTAL_MAX = 6000
ROWS_MAX = 5
BUTTONS_PER_ROW = 5
LABEL_MAX = 80
CUSTOM_ID_MAX = 100
ARGS_SHOWN = 20  # argument fields on a card; the rest are counted
ARG_NAME_MAX, ARG_VALUE_MAX = 100, 400
SUMMARY_MAX = 2000
MORE_SIZE = 20  # the "…: and N more" field
NO_MENTIONS: dict[str, Any] = {"parse": []}

PRIMARY, SECONDARY, SUCCESS, DANGER = 1, 2, 3, 4
COLOURS = {
    Status.WAITING: 0x5865F2,
    Status.APPROVED: 0x57F287,
    Status.REJECTED: 0xED4245,
    Status.TIMED_OUT: 0x99AAB5,
    Status.CANCELLED: 0x99AAB5,
}
_MARKDOWN = re.compile(r"([\\*_~`|>#\[\]()<@:-])")

Component = dict[str, Any]


def escape(text: str) -> str:
    """Discord's markdown, mentions (`<@…>`), headings and links shown as typed."""
    return _MARKDOWN.sub(r"\\\1", text)


def cut(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fit(text: str, limit: int) -> str:
    """Escape, then cut without leaving a lone escaping backslash at the end."""
    escaped = escape(text)
    if len(escaped) <= limit:
        return escaped
    head = escaped[: limit - 1]
    if head.endswith("\\") and (len(head) - len(head.rstrip("\\"))) % 2 == 1:
        head = head[:-1]
    return head + "…"


def who(actor: str) -> str:
    """A Discord user is mentioned (no ping); others are named with their kind."""
    kind, _, name = actor.partition(":")
    if kind == "discord" and name.isdigit():
        return f"<@{name}>"
    return f"{escape(name)} ({escape(kind)})" if name else escape(actor)


def decider(d: Decision) -> str:
    """Who decided: the person (`[people]`), else the platform's name, else a mention."""
    return decider_text(d, "discord", escape, who)


def when(at: datetime) -> str:
    """A date Discord shows in the reader's time zone."""
    return f"<t:{int(at.timestamp())}:f>"


def deadline_when(approval: Approval) -> str:
    """The deadline in the reader's zone, and in the calendar's when the policy has business hours."""
    return deadline_beside(approval, when)


def arg_fields(args: dict[str, Any], budget: int) -> list[dict[str, Any]]:
    """One inline field per argument while they fit in `budget` characters and ARGS_SHOWN
    fields; the last one then says how many were left out."""
    items, used = list(args.items()), 0
    fields: list[dict[str, Any]] = []
    for i, (key, value) in enumerate(items):
        name, text = cut(str(key), ARG_NAME_MAX) or "\u200b", fit(arg_text(value), ARG_VALUE_MAX) or "\u200b"
        last = i == len(items) - 1  # else keep room for the "and N more" field
        room, most = (budget, ARGS_SHOWN) if last else (budget - MORE_SIZE, ARGS_SHOWN - 1)
        if len(fields) >= most or used + len(name) + len(text) > room:
            fields.append({"name": "…", "value": f"and {len(items) - i} more", "inline": False})
            break
        fields.append({"name": name, "value": text, "inline": True})
        used += len(name) + len(text)
    return fields


def progress(approval: Approval) -> str:
    return f"{approval.approvals_count} of {approval.policy.quorum} approvals"


def footer(approval: Approval) -> str:
    parts = [f"Run {approval.run_id}", f"Step {approval.step}", f"Policy {approval.policy.name}"]
    if approval.policy.quorum > 1:
        parts.append(progress(approval))
    return cut(" · ".join(parts), 500)


def outcome_text(approval: Approval) -> str:
    """The decided form: outcome, who, when and the comment."""
    d = approval.decision
    if d is None:
        return ""
    lines = [f"{_outcome_head(approval.status, d)} · {when(d.decided_at)}"]
    if d.reason:
        lines.append("*" + fit(d.reason, 300) + "*")
    if d.comment:
        lines.append("\n".join("> " + line for line in fit(d.comment, 500).splitlines()))
    return cut("\n".join(lines), FIELD_VALUE_MAX)


def _outcome_head(status: Status, d: Decision) -> str:
    if status is Status.TIMED_OUT or d.source is Source.POLICY:
        verb = "approved" if d.outcome is Outcome.APPROVE else "rejected"
        return f"⌛ **Timed out**: {verb} by policy"
    if status is Status.CANCELLED:
        return f"🚫 **Cancelled** by {decider(d)}"
    if d.source is Source.GRANT:
        return f"✅ **Approved** under standing grant {escape(d.decided_by)}"
    if d.outcome is Outcome.APPROVE:
        return f"✅ **Approved** by {decider(d)}"
    return f"❌ **Rejected** by {decider(d)}"


def change_line(approval: Approval) -> str:
    """'approved with changes by <@1>: amount 4200 → 3900', or '' (gateway.core.rounds)."""
    text = rounds.change_text(approval, _named, lambda t: escape(t[:300]))
    return cut(f"✏️ {text}", FIELD_VALUE_MAX) if text else ""


def _named(identity: str, shown: str) -> str:
    return who(identity) if identity.startswith("discord:") else escape(shown)


def button(verb: str, label: str, ref: str, style: int) -> Component:
    return {
        "type": 2,
        "style": style,
        "label": cut(label, LABEL_MAX),
        "custom_id": f"hitl:{verb}:{ref}"[:CUSTOM_ID_MAX],
    }


def buttons(approval: Approval, ref: str, seen: str = "") -> list[Component]:
    """Approve carries `seen`, the round tag of the args shown: pressed after an edit, refused."""
    out = [button(f"approve.{seen}" if seen else "approve", "Approve", ref, SUCCESS)]
    if not approval.policy.require_reason:  # a policy that requires a reason gets only the modal
        out.append(button("reject", "Reject", ref, DANGER))
    out.append(button("reason", "Reject with reason…", ref, SECONDARY))
    if approval.editable:
        out.append(button("edit", "Edit & approve…", ref, PRIMARY))
    out += [
        button(f"grant.{g}.{seen}", f"Approve · {grants.label(g)}", ref, SUCCESS)
        for g in grants.offers(approval.policy)
    ]
    out += [
        button(f"extend.{format_duration(d)}", extend_rules.label(d), ref, SECONDARY)
        for d in extend_rules.choices(approval)
    ]
    return out


def rows(items: list[Component]) -> list[Component]:
    """Action rows of at most 5 buttons, at most 5 rows (the rest are left out)."""
    chunks = [items[i : i + BUTTONS_PER_ROW] for i in range(0, len(items), BUTTONS_PER_ROW)][:ROWS_MAX]
    return [{"type": 1, "components": chunk} for chunk in chunks]


def embed(approval: Approval, decides: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": fit(approval.title or "Approval requested", TITLE_MAX),
        "color": COLOURS.get(approval.status, COLOURS[Status.WAITING]),
        "footer": {"text": footer(approval)},
    }
    if approval.summary:
        out["description"] = fit(approval.summary, SUMMARY_MAX)
    fields: list[dict[str, Any]] = []
    if approval.deadline and not approval.status.final:
        extended = f" (extended {approval.extensions}×)" if approval.extensions else ""
        fields.append({"name": "Deadline", "value": deadline_when(approval) + extended, "inline": False})
    change = change_line(approval)
    if change:
        fields.append({"name": "Changes", "value": change, "inline": False})
    if approval.status.final:
        fields.append({"name": "Outcome", "value": outcome_text(approval) or approval.status.value, "inline": False})
    elif not decides:
        fields.append({"name": "Note", "value": escape(INFO_ONLY), "inline": False})
    used = sum(len(str(v)) for k, v in out.items() if k in ("title", "description"))
    used += len(out["footer"]["text"]) + sum(len(f["name"]) + len(f["value"]) for f in fields)
    out["fields"] = (arg_fields(approval.current_args, EMBED_TOTAL_MAX - used) + fields)[:FIELDS_MAX]
    return out


def card(approval: Approval, ref: str, seen: str = "", decides: bool = True) -> dict[str, Any]:
    """The message: the embed, with buttons while waiting (none once decided, or where nobody decides)."""
    live = not approval.status.final and decides
    return {
        "content": cut(card_text(approval), CONTENT_MAX),
        "embeds": [embed(approval, decides)],
        "components": rows(buttons(approval, ref, seen)) if live else [],
        "allowed_mentions": NO_MENTIONS,
    }


def card_text(approval: Approval) -> str:
    """The message's text (what a notification shows)."""
    d = approval.decision
    if d is None:
        return "Approval needed"
    return f"{approval.status.value.replace('_', ' ').capitalize()}"


def reminder(approval: Approval) -> str:
    deadline = f" before {deadline_when(approval)}" if approval.deadline else ""
    change = change_line(approval)
    again = f"\n{change}: please vote again" if change else ""
    return cut(f"🔔 Reminder: “{fit(approval.title, 300)}” still needs a decision{deadline}.{again}", CONTENT_MAX)


def already_text(approval: Approval) -> str:
    d = approval.decision
    if d is None:
        return "This approval is already decided; nothing changed."
    if approval.status is Status.TIMED_OUT:
        return f"Already timed out ({d.outcome.value} by policy); nothing changed."
    return f"Already {approval.status.verb} by {decider(d)}; nothing changed."
