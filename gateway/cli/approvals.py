"""`hitl-gateway approvals list|show|approve|reject|cancel`."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli.common import dump, table, with_runtime
from gateway.core.models import Outcome, Status
from gateway.service import Service
from gateway.service.commands import Authority
from gateway.service.queries import Reads
from gateway.settings import Settings

CLI_OPERATOR = "operator:cli"  # who the CLI's decisions, cancels, retries and re-posts are recorded as


def add_parser(sub: Any) -> None:
    ap = sub.add_parser("approvals", help="list, show and decide approvals")
    actions = ap.add_subparsers(dest="action", required=True)
    ls = actions.add_parser("list", help="approvals, newest first, as an aligned table")
    ls.add_argument("--status", choices=[s.value for s in Status])
    ls.add_argument("--run-id")
    ls.add_argument("--limit", type=int, default=50)
    show = actions.add_parser("show", help="one approval with its cards, deliveries, resume job and events")
    show.add_argument("id")
    for verb in ("approve", "reject"):
        d = actions.add_parser(verb)
        d.add_argument("id")
        d.add_argument("--by", help=f"whom you act for (kept as on_behalf_of; the decision is {CLI_OPERATOR}'s)")
        d.add_argument("--comment")
    c = actions.add_parser("cancel")
    c.add_argument("id")
    c.add_argument("--by", help="whom you act for (kept as on_behalf_of)")
    c.add_argument("--reason")
    ap.set_defaults(handler=run)


async def run(args: argparse.Namespace, settings: Settings) -> int:
    return await with_runtime(settings, lambda rt: _act(args, rt.service, rt.reads))


async def _act(args: argparse.Namespace, svc: Service, reads: Reads) -> int:
    if args.action == "list":
        status = Status(args.status) if args.status else None
        items = await reads.approvals(status=status, run_id=args.run_id, limit=args.limit)
        rows = [
            [a.id, a.status.value, f"{a.run_id}/{a.step}", a.created_at.strftime("%Y-%m-%d %H:%M"), a.title]
            for a in items
        ]
        table(["ID", "STATUS", "RUN/STEP", "CREATED", "TITLE"], rows)
        return 0
    if args.action == "show":
        approval = await svc.get(args.id)
        events = [e.to_api() for e in await reads.events(approval.id)]
        dump({**await svc.view(approval), "events": events})
        return 0
    if args.action == "cancel":
        dump((await svc.cancel(args.id, CLI_OPERATOR, args.reason, on_behalf_of=args.by)).to_api())
        return 0
    outcome = Outcome.APPROVE if args.action == "approve" else Outcome.REJECT
    approval = await svc.decide(
        args.id,
        outcome,
        CLI_OPERATOR,
        comment=args.comment,
        channel="cli",
        authority=Authority.OPERATOR,
        on_behalf_of=args.by,
    )
    dump(approval.to_api())
    return 0
