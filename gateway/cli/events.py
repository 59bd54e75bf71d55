"""`hitl-gateway events list|resend`: an approval's outbound events (docs/events.md), on the store
or, with `--url`, over the HTTP API (gateway.cli.ops), as an operator.

`list` reads the event deliveries of `GET /v1/approvals/{id}`; `resend` sends what
`POST /v1/approvals/{id}/events/resend` takes, checked by the same contract and sent again by the
same use case. A refusal names the option it is about, not the API's field."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli.approvals import RAW, REMOTE, remote_command
from gateway.cli.common import dump, table
from gateway.cli.ops import CLI_OPERATOR, Json, Operations, with_ops
from gateway.cli.refusals import named
from gateway.core.webhooks import webhook_name
from gateway.settings import Settings

OPTIONS = {"webhook": "--webhook", "by": "--by"}  # the API's fields as this command's options
_TYPE_PREFIX = "dev.hitl-gateway."  # the CloudEvents type is the kind after it


def add_parser(sub: Any) -> None:
    ev = sub.add_parser(
        "events",
        help="an approval's outbound events: list them, send given-up ones again",
        description=f"List an approval's outbound events and send the given-up ones again (docs/events.md). {REMOTE}",
        epilog="examples:\n  hitl-gateway events list APPROVAL_ID\n"
        "  hitl-gateway events resend APPROVAL_ID --webhook siem",
        formatter_class=RAW,
    )
    actions = ev.add_subparsers(dest="action", required=True)
    ls = remote_command(
        actions,
        "list",
        "the approval's outbound events in sending order: row, webhook, state "
        "(pending, failing, given_up, delivered), attempts, event id, kind, last error",
        "examples:\n  hitl-gateway events list APPROVAL_ID\n"
        "  hitl-gateway events list APPROVAL_ID --json   # the API's deliveries of kind event",
    )
    ls.add_argument("id", metavar="APPROVAL_ID")
    resend = remote_command(
        actions,
        "resend",
        "send the approval's given-up events again, with their ids and bodies, in order "
        f"(recorded as {CLI_OPERATOR}, or as the operator of the key with --url)",
        "examples:\n  hitl-gateway events resend APPROVAL_ID\n"
        "  hitl-gateway events resend APPROVAL_ID --webhook siem --by alice",
    )
    resend.add_argument("id", metavar="APPROVAL_ID")
    resend.add_argument("--webhook", metavar="NAME", help="only this webhook's events (default: every webhook)")
    resend.add_argument("--by", help="whom you act for (kept as on_behalf_of)")
    ev.set_defaults(handler=run, remote=True)


async def run(args: argparse.Namespace, settings: Settings | None) -> int:
    return await with_ops(args, settings, lambda ops: _act(args, ops))


async def _act(args: argparse.Namespace, ops: Operations) -> int:
    if args.action == "list":
        view = await ops.show(args.id)
        items = [d for d in view.get("deliveries") or [] if d["kind"] == "event"]
        if args.json:
            dump({"approval_id": view["id"], "items": items})
        else:
            table(*event_rows(items))
        return 0
    body: Json = {k: v for k, v in (("webhook", args.webhook), ("by", args.by)) if v is not None}
    resent = await named(OPTIONS, lambda: ops.resend_events(args.id, body))
    if args.json:
        dump(resent)
    else:
        for name, ids in sorted(resent["webhooks"].items()):
            print(f"{resent['approval_id']}  {name}  {len(ids)} queued again: {' '.join(ids)}")
    return 0


def state(delivery: Json) -> str:
    """As the dashboard counts them: pending (not tried yet), failing (tried, to be tried again),
    given_up, delivered."""
    status = delivery["status"]
    if status == "pending":
        return "failing" if delivery.get("attempts") else "pending"
    return {"failed": "given_up", "done": "delivered"}.get(status, str(status))


def event_rows(items: list[Json]) -> tuple[list[str], list[list[str]]]:
    """One row per event and webhook, in sending order; ROW is the outbox row's id."""
    rows = [
        [
            str(d["id"]),
            webhook_name(d["channel"]) or d["channel"],
            state(d),
            str(d["attempts"]),
            d.get("event_id") or "-",
            (d.get("event_type") or "-").removeprefix(_TYPE_PREFIX),
            (d.get("last_error") or "").replace("\n", " "),
        ]
        for d in items
    ]
    return ["ROW", "WEBHOOK", "STATE", "ATTEMPTS", "EVENT", "KIND", "LAST ERROR"], rows


__all__ = ["OPTIONS", "add_parser", "event_rows", "run", "state"]
