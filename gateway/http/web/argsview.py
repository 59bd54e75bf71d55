"""What the approval page shows of an approval's args and title: pure, no I/O.

The args are shown as they stand now: the edited ones once someone approved with changes (or
proposed changes a quorum still votes on), each changed row with the value the agent asked
for beside it. A title that quotes a changed value shows the change in place, so "Pay 4200"
does not go on saying 4200 after an approval with 3900.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gateway.core.edits import changed_names
from gateway.core.models import Approval, Outcome, Status

_INLINE = 80  # longer values (and objects, lists) are shown as indented JSON


@dataclass(frozen=True, slots=True)
class ArgRow:
    """One top-level arg: its current value, and what the agent asked for when it changed."""

    name: str
    value: str
    block: bool  # shown as a preformatted block (JSON of an object or list, long text)
    before: str | None = None  # the agent's value, when an edit changed it
    change: str = ""  # "", "changed", "added" or "removed"


@dataclass(frozen=True, slots=True)
class TitlePart:
    text: str
    before: str | None = None  # the text this part replaced (an edited value the title quoted)


def shown(value: Any) -> tuple[str, bool]:
    """A value as a person reads it: strings bare, the rest JSON; (text, as a block)."""
    if isinstance(value, str):
        return value, len(value) > _INLINE or "\n" in value
    if isinstance(value, dict | list) and value:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str), True
    return json.dumps(value, ensure_ascii=False, default=str), False


def current_args(approval: Approval) -> dict[str, Any]:
    """The args that run (approved with changes) or that the current round votes on."""
    d = approval.decision
    if d is not None and d.args is not None:
        return dict(d.args)
    return dict(approval.current_args)


def edit_state(approval: Approval) -> str:
    """'approved with changes', 'changes proposed', or '' when the args are the agent's."""
    if current_args(approval) == approval.args:
        return ""
    d = approval.decision
    if d is not None and d.outcome is Outcome.APPROVE and approval.status is Status.APPROVED:
        return "approved with changes"
    return "changes proposed"


def arg_rows(approval: Approval) -> list[ArgRow]:
    original, now = approval.args, current_args(approval)
    changed = set(changed_names(original, now))
    rows: list[ArgRow] = []
    for name in dict.fromkeys([*now, *original]):
        if name not in changed:
            text, block = shown(now[name])
            rows.append(ArgRow(name, text, block))
        elif name not in original:
            text, block = shown(now[name])
            rows.append(ArgRow(name, text, block, change="added"))
        elif name not in now:
            before, block = shown(original[name])
            rows.append(ArgRow(name, "(removed)", False, before, "removed"))
        else:
            text, block = shown(now[name])
            before, before_block = shown(original[name])
            rows.append(ArgRow(name, text, block or before_block, before, "changed"))
    return rows


def title_parts(approval: Approval) -> list[TitlePart]:
    """The title, with each changed scalar value it quotes (as a whole word, once) replaced by
    the current one and marked with what it was."""
    title, original, now = approval.title, approval.args, current_args(approval)
    swaps: list[tuple[int, int, str, str]] = []
    for name in changed_names(original, now):
        old, new = original.get(name), now.get(name)
        if name not in now or isinstance(old, dict | list | bool) or old is None or old == "":
            continue
        old_text, new_text = shown(old)[0], shown(new)[0]
        hits = list(re.finditer(rf"(?<![\w.]){re.escape(old_text)}(?![\w]|\.\d)", title))
        if len(hits) == 1:
            swaps.append((hits[0].start(), hits[0].end(), old_text, new_text))
    parts: list[TitlePart] = []
    at = 0
    for start, end, old_text, new_text in sorted(swaps):
        if start < at:
            continue  # overlapping quotes: keep the first
        parts += [TitlePart(title[at:start]), TitlePart(new_text, old_text)]
        at = end
    parts.append(TitlePart(title[at:]))
    return [p for p in parts if p.text or p.before is not None]


def plain_title(approval: Approval) -> str:
    """The title with the current values (for the window title)."""
    return "".join(p.text for p in title_parts(approval))


_REPR_TAIL = re.compile(r"\n\nTool: (?P<tool>[^\n]{1,200})\nArgs: (?P<args>\{.*\})\Z", re.S)


def summary_text(approval: Approval) -> str:
    """The summary, without the Python repr of the args that LangChain's default description
    ends with (`Tool: NAME\nArgs: {'k': 'v'}`) when older agent SDKs passed it on: the page
    shows the args in their table, so the tail names the tool only."""
    found = _REPR_TAIL.search(approval.summary)
    if found is None or found["args"] != repr(approval.args):
        return approval.summary
    return f"{approval.summary[: found.start()]}\n\nTool: `{found['tool']}`"


def outcome_heading(approval: Approval) -> str:
    """'approved', 'rejected', 'timed out (rejected)', 'cancelled': the status, and the
    outcome only where the status does not say it (a timeout approves or rejects, by policy)."""
    status, d = approval.status, approval.decision
    if d is not None and status is Status.TIMED_OUT:
        return f"{status.verb} ({'approved' if d.outcome is Outcome.APPROVE else 'rejected'})"
    return status.verb


__all__ = [
    "ArgRow",
    "TitlePart",
    "arg_rows",
    "current_args",
    "edit_state",
    "outcome_heading",
    "plain_title",
    "shown",
    "summary_text",
    "title_parts",
]
