"""Pure view helpers for the web pages: ages, SLA countdowns, policy text."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from gateway.core.durations import format_duration
from gateway.core.models import Approval


def humanize(delta: timedelta) -> str:
    """'3d 4h', '12m', '45s': the two largest units."""
    seconds = int(abs(delta.total_seconds()))
    parts: list[str] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return " ".join(parts[:2])


def sla(approval: Approval, now: datetime) -> tuple[str, str]:
    """The SLA countdown text and its CSS class (ok, soon, late, done)."""
    if approval.status.final:
        return approval.status.value.replace("_", " "), "done"
    if approval.deadline is None:
        return "no deadline", "ok"
    left = approval.deadline - now
    if left.total_seconds() <= 0:
        return f"overdue by {humanize(left)}", "late"
    soon = left <= timedelta(minutes=5) or left <= (approval.deadline - approval.created_at) / 5
    return f"due in {humanize(left)}", "soon" if soon else "ok"


def policy_text(approval: Approval) -> str:
    p = approval.policy
    timeout = format_duration(p.timeout) if p.timeout else "never"
    text = f"{p.name}: {timeout}, then {p.on_timeout.value}"
    if p.calendar is not None:  # the timeout counts working time only
        text = f"{p.name}: {timeout} of {p.calendar.name} business hours, then {p.on_timeout.value}"
    return text + (f", quorum {p.quorum}" if p.quorum > 1 else "")


def row(approval: Approval, now: datetime) -> dict[str, Any]:
    countdown, css = sla(approval, now)
    return {
        "a": approval,
        "age": humanize(now - approval.created_at),
        "sla": countdown,
        "sla_class": css,
        "policy": policy_text(approval),
    }


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
