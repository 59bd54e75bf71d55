"""`hitl-gateway delegations list|show|add|revoke`: who decides for whom while someone is away,
on the store or, with `--url`, over the HTTP API (gateway.cli.ops), as an operator.

`add` sends what `POST /v1/delegations` takes, checked by the same contract and service (an
operator delegates for anyone); the only thing the CLI adds is a duration for `--start` and
`--until`, read from now. A refusal names the option it is about, not the API's field."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime
from typing import Any

from gateway.cli.approvals import RAW, REMOTE, remote_command
from gateway.cli.common import dump, table
from gateway.cli.ops import CLI_OPERATOR, Json, Operations, with_ops
from gateway.cli.present import delegation_rows, delegation_state, moment
from gateway.cli.refusals import named
from gateway.core.clock import iso
from gateway.core.durations import parse_duration
from gateway.core.errors import ValidationError
from gateway.settings import Settings

# The API's fields as this command's options, for the messages that name them.
OPTIONS = {
    "delegator": "--from",
    "delegate": "--to",
    "from": "--start",
    "until": "--until",
    "reason": "--reason",
    "of": "--for",
}
_DATE = re.compile(r"^\d{4}-")  # the start of a date-time, which the API reads (not a duration)
_AT = "an RFC 3339 date-time with an offset (2031-07-15T00:00:00Z)"
_AHEAD = "a duration from now (8h, 14d)"
_WHEN = f"{_AT} or {_AHEAD}"


def add_parser(sub: Any) -> None:
    dl = sub.add_parser(
        "delegations",
        help="who decides for whom while someone is away: list, add, revoke",
        description=f"List, add and revoke delegations (docs/identity.md). {REMOTE}",
        epilog="examples:\n  hitl-gateway delegations add --from web:alice --to web:bob --until 14d --reason holiday\n"
        "  hitl-gateway delegations list --for web:alice\n  hitl-gateway delegations revoke ID",
        formatter_class=RAW,
    )
    actions = dl.add_subparsers(dest="action", required=True)
    ls = remote_command(
        actions,
        "list",
        "delegations not over yet, newest first: id, delegator, delegate, state, window, uses",
        "examples:\n  hitl-gateway delegations list --for web:alice\n  hitl-gateway delegations list --all",
    )
    ls.add_argument("--for", dest="of", metavar="IDENTITY", help="only those where this person delegates or decides")
    ls.add_argument("--all", action="store_true", dest="everything", help="revoked and ended ones too")
    show = remote_command(
        actions,
        "show",
        "one delegation with its trail: created, used, revoked",
        "example:\n  hitl-gateway delegations show ID",
    )
    show.add_argument("id")
    add = remote_command(
        actions,
        "add",
        f"let --to decide for --from until --until (at most 90 days; created by {CLI_OPERATOR}, "
        "or the operator of the key with --url)",
        "examples:\n  hitl-gateway delegations add --from web:alice --to web:bob --until 14d --reason holiday\n"
        "  hitl-gateway delegations add --from web:alice --to web:carol "
        "--start 2031-07-01T00:00:00Z --until 2031-07-15T00:00:00Z",
    )
    add.add_argument("--from", dest="delegator", required=True, metavar="IDENTITY", help="whose approvals (web:alice)")
    add.add_argument("--to", dest="delegate", required=True, metavar="IDENTITY", help="who decides for them (web:bob)")
    add.add_argument("--until", required=True, metavar="WHEN", help=f"when it ends: {_WHEN}")
    add.add_argument("--start", metavar="WHEN", help=f"when it starts (default: now): {_WHEN}")
    add.add_argument("--reason", help="why, such as 'on holiday'")
    revoke = remote_command(
        actions,
        "revoke",
        "revoke a delegation: from now on the delegate decides only for themselves",
        "example:\n  hitl-gateway delegations revoke ID",
    )
    revoke.add_argument("id")
    dl.set_defaults(handler=run, remote=True)


async def run(args: argparse.Namespace, settings: Settings | None) -> int:
    now = datetime.now(UTC)
    body = _body(args, now) if args.action == "add" else None  # a bad option stops before the store opens
    if args.action == "list" and args.of is not None and not args.of.strip():
        raise ValidationError("--for", "is empty: name an identity, like web:alice")
    return await with_ops(args, settings, lambda ops: _act(args, ops, body, now))


async def _act(args: argparse.Namespace, ops: Operations, body: Json | None, now: datetime) -> int:
    if args.action == "list":
        items = await named(OPTIONS, lambda: ops.delegations(args.of, args.everything))
        if args.json:
            dump({"items": items})
        else:
            table(*delegation_rows(items, now))
        return 0
    if args.action == "show":
        view = await ops.delegation(args.id)
    elif args.action == "add":
        assert body is not None
        view = await named(OPTIONS, lambda: ops.delegate(body))
    else:
        view = await ops.revoke_delegation(args.id)
    if args.json:
        dump(view)
    elif args.action == "show":
        print("\n".join(_summary(view, now)))
    elif args.action == "add":
        window = f"from {moment(view['from'])} until {moment(view['until'])}"
        print(f"{view['id']}  {view['delegate']} decides for {view['delegator']} {window}")
    else:
        print(f"{view['id']}  revoked by {view['revoked_by']} at {moment(view['revoked_at'])}")
    return 0


def _body(args: argparse.Namespace, now: datetime) -> Json:
    """`POST /v1/delegations`'s body; a duration becomes the instant that far from now."""
    body: Json = {"delegator": args.delegator, "delegate": args.delegate, "until": _when(args.until, "--until", now)}
    if args.start is not None:
        body["from"] = _when(args.start, "--start", now)
    if args.reason is not None:
        body["reason"] = args.reason
    return body


def _when(value: str, option: str, now: datetime) -> str:
    if _DATE.match(value.strip()):
        return value  # the API's own check names what is wrong with it
    try:
        return str(iso(now.replace(microsecond=0) + parse_duration(value)))
    except (ValueError, OverflowError):
        raise ValidationError(option, f"{value!r} is neither {_AT} nor {_AHEAD}") from None


def _summary(view: Json, now: datetime) -> list[str]:
    lines = [
        f"{view['id']}  {delegation_state(view, now)}  {view['delegate']} decides for {view['delegator']}",
        f"  from        {moment(view['from'])}",
        f"  until       {moment(view['until'])}",
        f"  reason      {view.get('reason') or '-'}",
        f"  created     {view['created_at']} by {view['created_by']}",
        f"  uses        {view.get('uses', 0)}" + (f", last {view['last_used_at']}" if view.get("last_used_at") else ""),
    ]
    if view.get("revoked_at"):
        lines.append(f"  revoked     {view['revoked_at']} by {view['revoked_by']}")
    events = view.get("events") or []
    if events:
        lines.append("  events")
        lines += [
            f"    {e['at']}  {e['kind']:<8} {e.get('actor') or ''}"
            + (f" on {e['approval_id']}" if e.get("approval_id") else "")
            for e in events
        ]
    return lines


__all__ = ["OPTIONS", "add_parser", "run"]
