"""Pure Block Kit rendering of approval cards, the reject-with-reason modal and short replies.

Every text is escaped for mrkdwn and cut to Slack's limits (see docs/slack.md): header 150,
section text 3000, field 2000, at most 10 fields, button text 75, action_id 255, value 2000,
confirm title 100 / text 300, modal title 24, private_metadata 3000.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from gateway.core import extend as extend_rules
from gateway.core import grants, rounds
from gateway.core.clock import iso
from gateway.core.durations import format_duration
from gateway.core.models import Approval, Decision, Outcome, Source, Status
from gateway.plugin import INFO_ONLY, arg_text, deadline_beside, decider_text

HEADER_MAX = 150
SECTION_MAX = 3000
FIELD_MAX = 2000
FIELDS_MAX = 10
BUTTON_MAX = 75
ACTION_ID_MAX = 255
VALUE_MAX = 2000
CONFIRM_TITLE_MAX = 100
CONFIRM_TEXT_MAX = 300
MODAL_TITLE_MAX = 24
METADATA_MAX = 3000
ACTIONS_BLOCK = "hitl_actions"
REASON_BLOCK = "reason"
REASON_INPUT = "reason_input"
REASON_CALLBACK = "hitl:reason"

Block = dict[str, Any]


def escape(text: str) -> str:
    """Slack's mrkdwn control characters: &, < and >."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cut(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fit(text: str, limit: int) -> str:
    """Escape, then cut without splitting an escape sequence like `&amp;`."""
    out: list[str] = []
    size = 0
    for ch in text:
        piece = escape(ch)
        if size + len(piece) > limit - 1:
            return "".join(out) + "…"
        out.append(piece)
        size += len(piece)
    return "".join(out)


def _plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": cut(text, limit) or " ", "emoji": True}


def _code(text: str) -> str:
    return "`" + escape(text.replace("`", "'")[:200]) + "`"


def who(actor: str) -> str:
    """How an identity is shown: Slack users are mentioned, others named with their kind."""
    kind, _, name = actor.partition(":")
    if kind == "slack" and name:
        return f"<@{escape(name)}>"
    if name:
        return f"{escape(name)} ({escape(kind)})"
    return escape(actor)


def decider(d: Decision) -> str:
    """Who decided: the person (`[people]`), else the platform's name, else a mention."""
    return decider_text(d, "slack", escape, who)


def when(at: datetime) -> str:
    """A date Slack shows in the reader's time zone, with a UTC fallback."""
    fallback = iso(at) or ""
    return f"<!date^{int(at.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


def deadline_when(approval: Approval) -> str:
    """The deadline in the reader's zone, and in the calendar's when the policy has business hours."""
    return deadline_beside(approval, when)


def arg_fields(args: dict[str, Any]) -> list[dict[str, str]]:
    """One field per argument, at most 10 (the last one says how many were left out)."""
    items = list(args.items())
    shown = items if len(items) <= FIELDS_MAX else items[: FIELDS_MAX - 1]
    fields = []
    for key, value in shown:
        name = fit(str(key), 200)
        fields.append({"type": "mrkdwn", "text": f"*{name}*\n" + fit(arg_text(value), FIELD_MAX - len(name) - 3)})
    if len(items) > len(shown):
        fields.append({"type": "mrkdwn", "text": f"_…and {len(items) - len(shown)} more_"})
    return fields


def progress(approval: Approval) -> str:
    """Quorum progress, e.g. '1 of 2 approvals'."""
    return f"{approval.approvals_count} of {approval.policy.quorum} approvals"


def context_line(approval: Approval) -> str:
    parts = [f"Run {_code(approval.run_id)}", f"Step {_code(approval.step)}"]
    parts.append(f"Deadline {deadline_when(approval)}" if approval.deadline else "No deadline")
    if approval.extensions:
        parts[-1] += f" (extended {approval.extensions}×)"
    parts.append(f"Policy {_code(approval.policy.name)}")
    if approval.policy.quorum > 1:
        parts.append(progress(approval))
    return cut(" · ".join(parts), SECTION_MAX)


def outcome_text(approval: Approval) -> str:
    """The decided form: outcome, who, when and the comment."""
    d = approval.decision
    if d is None:
        return ""
    head = _outcome_head(approval.status, d)
    lines = [f"{head} · {when(d.decided_at)}"]
    if d.reason:
        lines.append("_" + fit(d.reason, 500) + "_")
    if d.comment:
        lines.append("\n".join("> " + line for line in fit(d.comment, SECTION_MAX - 800).splitlines()))
    return cut("\n".join(lines), SECTION_MAX)


def _outcome_head(status: Status, d: Decision) -> str:
    if status is Status.TIMED_OUT or d.source is Source.POLICY:
        verb = "approved" if d.outcome is Outcome.APPROVE else "rejected"
        return f":hourglass: *Timed out*: {verb} by policy"
    if status is Status.CANCELLED:
        return f":no_entry_sign: *Cancelled* by {decider(d)}"
    if d.source is Source.GRANT:  # nobody pressed anything now: the standing grant did
        return f":white_check_mark: *Approved* under standing grant `{d.decided_by}`"
    if d.outcome is Outcome.APPROVE:
        return f":white_check_mark: *Approved* by {decider(d)}"
    return f":x: *Rejected* by {decider(d)}"


def _button(verb: str, text: str, ref: str, style: str | None = None) -> Block:
    button: Block = {
        "type": "button",
        "action_id": cut(f"hitl:{verb}:{ref}", ACTION_ID_MAX),
        "text": _plain(text, BUTTON_MAX),
        "value": ref[:VALUE_MAX],
    }
    if style:
        button["style"] = style
    return button


def _extras(approval: Approval, ref: str) -> list[Block]:
    """Edit & approve (when the suspend allows edits) and the policy's '+1h' extend buttons."""
    out = [_button("edit", "Edit & approve…", ref)] if approval.editable else []
    for d in extend_rules.choices(approval):
        out.append(_button(f"extend.{format_duration(d)}", extend_rules.label(d), ref))
    return out


def change_line(approval: Approval) -> str:
    """'_approved with changes by <@U1>: amount 4200 → 3900_', or '' (gateway.core.rounds)."""
    text = rounds.change_text(approval, _named, lambda t: escape(t[:1000]))
    return f":pencil2: {cut(text, 1500)}" if text else ""


def _named(identity: str, shown: str) -> str:
    return who(identity) if identity.startswith("slack:") else escape(shown)


def actions(approval: Approval, ref: str, seen: str = "") -> Block:
    """The buttons; Approve's action_id carries `seen`, the round tag of the args shown
    (`hitl:approve.<tag>:<ref>`, gateway.core.rounds.tag): pressed after an edit, it is refused."""
    approve = _button(f"approve.{seen}" if seen else "approve", "Approve", ref, "primary")
    approve["confirm"] = {
        "title": _plain("Approve this step?", CONFIRM_TITLE_MAX),
        "text": _plain(f"Approve “{approval.title}” ({approval.step})?", CONFIRM_TEXT_MAX),
        "confirm": _plain("Approve", 30),
        "deny": _plain("Cancel", 30),
    }
    return {
        "type": "actions",
        "block_id": ACTIONS_BLOCK,
        "elements": [
            approve,
            # a policy that requires a reason gets only the modal that asks for one
            *([] if approval.policy.require_reason else [_button("reject", "Reject", ref, "danger")]),
            _button("reason", "Reject with reason…", ref),
            # "Approve · 1h": approve, and allow the same for 1h (action_id well under 255)
            *[
                _button(f"grant.{g}.{seen}", f"Approve · {grants.label(g)}", ref)
                for g in grants.offers(approval.policy)
            ],
            *_extras(approval, ref),
        ],
    }


def card_blocks(approval: Approval, ref: str, seen: str = "", decides: bool = True) -> list[Block]:
    """The whole card: live buttons while waiting, the outcome (and no buttons) once decided.
    Where nobody may decide (`decides` false) a waiting card says so instead of its buttons."""
    blocks: list[Block] = [{"type": "header", "text": _plain(approval.title or "Approval requested", HEADER_MAX)}]
    section: Block = {"type": "section"}
    if approval.summary:
        section["text"] = {"type": "mrkdwn", "text": fit(approval.summary, SECTION_MAX)}
    fields = arg_fields(approval.args)
    if fields:
        section["fields"] = fields
    if len(section) > 1:
        blocks.append(section)
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context_line(approval)}]})
    change = change_line(approval)
    if change:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": change}})
    if approval.status.final:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": outcome_text(approval)}})
    elif decides:
        blocks.append(actions(approval, ref, seen))
    else:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"_{escape(INFO_ONLY)}_"}})
    return blocks


COMPACT_SUMMARY = 600
COMPACT_FIELDS = 3
COMPACT_FIELD = 300


def compact_blocks(approval: Approval, ref: str, page: str, seen: str = "", decides: bool = True) -> list[Block]:
    """The card Slack refused (too many blocks, too much text), cut down: the title, the summary,
    the first fields and a link to the whole request on the web page `page`, with the same
    context line and buttons (or outcome). Well under every limit whatever the request holds."""
    section: Block = {"type": "section", "text": {"type": "mrkdwn", "text": _compact_text(approval, page)}}
    fields = [
        {"type": "mrkdwn", "text": cut(f["text"], COMPACT_FIELD)}
        for f in arg_fields(dict(list(approval.args.items())[:COMPACT_FIELDS]))
    ]
    if fields:
        section["fields"] = fields
    blocks = card_blocks(approval, ref, seen, decides)
    blocks[1:-2] = [section]  # header, [this section], context, actions or outcome
    return blocks


def _compact_text(approval: Approval, page: str) -> str:
    summary = fit(approval.summary, COMPACT_SUMMARY) if approval.summary else ""
    more = len(approval.args) - COMPACT_FIELDS
    shown = f"the first {COMPACT_FIELDS} of {len(approval.args)} arguments" if more > 0 else "a shortened card"
    link = f"<{page}|the whole request>" if page.startswith(("https://", "http://")) else "the web inbox"
    note = f"_Too long for Slack: {shown}; see {link}._"
    return f"{summary}\n{note}" if summary else note


def card_text(approval: Approval) -> str:
    """The notification / fallback text of the card: escaped like the blocks, so that a title
    cannot mention `<!channel>` or hide a link in a phone's notification."""
    title = fit(approval.title or "Approval requested", 300)
    d = approval.decision
    if d is None:
        return f"Approval needed: {title}"
    by = "policy" if d.source is Source.POLICY else decider(d)
    return f"{title}: {approval.status.value.replace('_', ' ')} ({d.outcome.value}) by {by}"


def reminder_text(approval: Approval) -> str:
    """A nudge; when an approver changed the args, what changed (the votes restarted on them)."""
    deadline = f" before {deadline_when(approval)}" if approval.deadline else ""
    change = change_line(approval)
    again = f"\n{change}: please vote again" if change else ""
    return f":bell: Reminder: “{fit(approval.title, 300)}” still needs a decision{deadline}.{again}"


def reason_modal(approval: Approval, ref: str, channel_id: str) -> Block:
    """The reject-with-reason form; `private_metadata` carries the signed reference."""
    metadata = json.dumps({"ref": ref, "channel": channel_id}, separators=(",", ":"))
    return {
        "type": "modal",
        "callback_id": REASON_CALLBACK,
        "private_metadata": metadata[:METADATA_MAX],
        "title": _plain("Reject with reason", MODAL_TITLE_MAX),
        "submit": _plain("Reject", 24),
        "close": _plain("Cancel", 24),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{fit(approval.title, 2000)}*"}},
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "label": _plain("Why reject?", 2000),
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_INPUT,
                    "multiline": True,
                    "max_length": 2000,
                },
            },
        ],
    }


def already_text(approval: Approval) -> str:
    """What a late presser is told, e.g. 'Already approved by <@U1>; nothing changed.'"""
    d = approval.decision
    if d is None:
        return "This approval is already decided; nothing changed."
    if approval.status is Status.TIMED_OUT:
        return f"Already timed out ({d.outcome.value} by policy); nothing changed."
    return f"Already {approval.status.verb} by {decider(d)}; nothing changed."
