"""What the operator commands print for people: tables with `id` first, ages such as "3m", and
a short summary of one approval. Pure: every function takes `now`; `--json` prints the data."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

Json = dict[str, Any]
TITLE_WIDTH = 50  # a long title is cut in a table (`approvals show` prints it whole)


def span(delta: timedelta) -> str:
    """A duration in its largest unit, rounded down: "40s", "3m", "2h", "5d"."""
    seconds = max(0, int(delta.total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def age(then: str | None, now: datetime) -> str:
    """How long ago an RFC 3339 time (the API's) was: "3m" ("-" when there is none)."""
    return span(now - datetime.fromisoformat(then)) if then else "-"


def _until(when: str | None, now: datetime) -> str:
    if not when:
        return "none"
    moment = datetime.fromisoformat(when)
    return f"{when} (in {span(moment - now)})" if moment > now else f"{when} ({span(now - moment)} ago)"


def _cut(text: str, width: int = TITLE_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def approval_rows(items: list[Json], now: datetime) -> tuple[list[str], list[list[str]]]:
    rows = [
        [a["id"], a["status"], _cut(a["title"]), age(a.get("created_at"), now), f"{a['run_id']}/{a['step']}"]
        for a in items
    ]
    return ["ID", "STATUS", "TITLE", "AGE", "RUN/STEP"], rows


def job_rows(items: list[Json], now: datetime) -> tuple[list[str], list[list[str]]]:
    """A job is named by its approval's id (what `jobs retry` takes); AGE is since its last change."""
    rows = [
        [
            j["approval_id"],
            j["status"],
            j["worker"],
            str(j["attempts"]),
            age(j.get("updated_at"), now),
            (j.get("last_error") or "").replace("\n", " "),
        ]
        for j in items
    ]
    return ["APPROVAL", "STATUS", "WORKER", "ATTEMPTS", "AGE", "LAST ERROR"], rows


def _decision(d: Json | None) -> str:
    if not d:
        return "none yet"
    done = {"approve": "approved", "reject": "rejected"}.get(d["outcome"], d["outcome"])
    text = f"{done} by {d['decided_by']}"
    text += f" ({d['source']}" + (f", {d['channel']})" if d.get("channel") else ")")
    if d.get("on_behalf_of"):
        text += f" on behalf of {d['on_behalf_of']}"
    said = d.get("comment") or d.get("reason")
    return text + (f": {said}" if said else "")


def summary(view: Json, now: datetime) -> list[str]:
    """`approvals show` for people: what was asked, where it stands, and its last events."""
    quorum = view.get("quorum") or {}
    lines = [
        f"{view['id']}  {view['status']}  {view['title']}",
        f"  run/step    {view['run_id']} / {view['step']}",
        f"  agent       {view.get('agent') or '-'}",
        f"  created     {view.get('created_at')} ({age(view.get('created_at'), now)} ago)",
        f"  deadline    {_until(view.get('deadline'), now)}",
        f"  decision    {_decision(view.get('decision'))}",
        f"  quorum      {quorum.get('approvals', 0)}/{quorum.get('required', 1)}",
        f"  args        {json.dumps(view.get('args'), sort_keys=True)}",
    ]
    if view.get("summary"):
        lines.insert(1, f"  {view['summary']}")
    if view.get("approvers"):
        lines.append(f"  approvers   {', '.join(view['approvers'])}")
    for card in view.get("cards") or []:
        lines.append(
            f"  card        {card['channel']}: {card['status']}" + (f" ({card['error']})" if card.get("error") else "")
        )
    job = view.get("resume_job")
    if job:
        lines.append(f"  resume job  {job['worker']}: {job['status']}, {job['attempts']} attempt(s)")
    events = view.get("events") or []
    if events:
        lines.append("  events")
        lines += [f"    {e['at']}  {e['kind']:<16} {e.get('actor') or ''}".rstrip() for e in events[-10:]]
        if len(events) > 10:
            lines.append(f"    ({len(events) - 10} earlier: --json prints them all)")
    return lines


def moment(when: str) -> str:
    """An API date-time to the second, for people: "2031-07-15T00:00:00Z" (`--json` keeps it whole)."""
    return datetime.fromisoformat(when).astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def delegation_state(d: Json, now: datetime) -> str:
    """revoked, ended, active or scheduled (it starts later)."""
    if d.get("revoked_at"):
        return "revoked"
    if datetime.fromisoformat(d["until"]) <= now:
        return "ended"
    return "scheduled" if datetime.fromisoformat(d["from"]) > now else "active"


def delegation_rows(items: list[Json], now: datetime) -> tuple[list[str], list[list[str]]]:
    """The delegate decides for the delegator from FROM until UNTIL; USES: decisions made through it."""
    rows = [
        [
            d["id"],
            d["delegator"],
            d["delegate"],
            delegation_state(d, now),
            moment(d["from"]),
            moment(d["until"]),
            str(d.get("uses", 0)),
            _cut((d.get("reason") or "").replace("\n", " ")),
        ]
        for d in items
    ]
    return ["ID", "DELEGATOR", "DELEGATE", "STATE", "FROM", "UNTIL", "USES", "REASON"], rows
