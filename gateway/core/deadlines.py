"""How every card shows an approval's deadline: in the time zone of its policy's calendar.

A policy with business hours (`calendar = "NAME"`) counts in a place's working day, so its
deadline is shown in that place's time: 'Mon 2026-12-07 12:00 CET'. Without a calendar the
deadline is shown in UTC, as before. Channels whose platform writes a date in each reader's own
zone (a date token) add the calendar's text beside it (`business_deadline`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from gateway.core.models import Approval


def shown_deadline(approval: Approval) -> str:
    """The deadline as text: in the calendar's zone ('Mon 2026-12-07 12:00 CET'), else in UTC
    ('2026-12-07 11:00 UTC'); empty when the approval has no deadline."""
    if approval.deadline is None:
        return ""
    calendar = approval.policy.calendar
    if calendar is not None:
        return calendar.shown(approval.deadline)
    return approval.deadline.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def business_deadline(approval: Approval) -> str | None:
    """The deadline in the calendar's zone, 'Mon 2026-12-07 12:00 CET', or None without a deadline
    or a calendar: for a card that already shows the instant in each reader's own zone."""
    calendar = approval.policy.calendar
    if approval.deadline is None or calendar is None:
        return None
    return calendar.shown(approval.deadline)


def deadline_beside(approval: Approval, token: Callable[[datetime], str]) -> str:
    """A platform's date token for the deadline (`token`: shown in each reader's own zone), with
    the calendar's text beside it when the policy has business hours; empty without a deadline."""
    if approval.deadline is None:
        return ""
    local = business_deadline(approval)
    return token(approval.deadline) + (f" ({local})" if local else "")


__all__ = ["business_deadline", "deadline_beside", "shown_deadline"]
