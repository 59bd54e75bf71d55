"""`hitl-gateway approvals list|show|approve|reject|cancel`, on the store or, with `--url`, over
the HTTP API (gateway.cli.ops)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from gateway.cli.common import dump, table
from gateway.cli.ops import CLI_OPERATOR, Operations, with_ops
from gateway.cli.present import approval_rows, summary
from gateway.core.models import Status
from gateway.settings import Settings

RAW = argparse.RawDescriptionHelpFormatter  # keeps the examples' lines as written
REMOTE = "With --url URL (or $HITL_URL) and an operator key, it acts on that gateway over HTTP."
_WHO = f"recorded as {CLI_OPERATOR}, or as the operator of the key with --url"


def _command(actions: Any, name: str, help: str, example: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = actions.add_parser(
        name, help=help, description=f"{help[0].upper()}{help[1:]}. {REMOTE}", epilog=example, formatter_class=RAW
    )
    parser.add_argument("--json", action="store_true", help="print the API's JSON (for scripts)")
    return parser


def add_parser(sub: Any) -> None:
    ap = sub.add_parser(
        "approvals",
        help="list, show and decide approvals",
        description=f"List, show and decide approvals. {REMOTE}",
        epilog="examples:\n  hitl-gateway approvals list --status waiting_approval\n"
        "  HITL_OPERATOR_KEY=... hitl-gateway --url https://gw.example approvals show ID",
        formatter_class=RAW,
    )
    actions = ap.add_subparsers(dest="action", required=True)
    ls = _command(
        actions,
        "list",
        "approvals, newest first: id, status, title, age",
        "example:\n  hitl-gateway approvals list --status waiting_approval --limit 20",
    )
    ls.add_argument("--status", choices=[s.value for s in Status])
    ls.add_argument("--run-id")
    ls.add_argument("--limit", type=int, default=50)
    show = _command(
        actions,
        "show",
        "one approval: what was asked, where it stands, its cards, resume job and events",
        "examples:\n  hitl-gateway approvals show ID\n"
        "  hitl-gateway approvals show ID --json   # everything, as the API gives it",
    )
    show.add_argument("id")
    for verb in ("approve", "reject"):
        d = _command(
            actions,
            verb,
            f"{verb} an approval as an operator ({_WHO})",
            f"example:\n  hitl-gateway approvals {verb} ID --by alice --comment 'checked the invoice'",
        )
        d.add_argument("id")
        d.add_argument("--by", help="whom you act for (kept as on_behalf_of, never as who decided)")
        d.add_argument("--comment")
    c = _command(
        actions,
        "cancel",
        f"cancel a pending approval ({_WHO})",
        "example:\n  hitl-gateway approvals cancel ID --reason 'the run was stopped'",
    )
    c.add_argument("id")
    c.add_argument("--by", help="whom you act for (kept as on_behalf_of)")
    c.add_argument("--reason")
    ap.set_defaults(handler=run, remote=True)


async def run(args: argparse.Namespace, settings: Settings | None) -> int:
    return await with_ops(args, settings, lambda ops: _act(args, ops))


async def _act(args: argparse.Namespace, ops: Operations) -> int:
    now = datetime.now(UTC)
    if args.action == "list":
        items = await ops.approvals(args.status, args.run_id, args.limit)
        if args.json:
            dump({"items": items})
        else:
            table(*approval_rows(items, now))
        return 0
    if args.action == "show":
        view = await ops.show(args.id)
    elif args.action == "cancel":
        view = await ops.cancel(args.id, args.by, args.reason)
    else:
        view = await ops.decide(args.id, args.action, args.by, args.comment)
    if args.json:
        dump(view)
    elif args.action == "show":
        print("\n".join(summary(view, now)))
    else:
        who = (view.get("decision") or {}).get("decided_by", "")
        print(f"{view['id']}  {view['status']}" + (f" by {who}" if who else "") + f"  {view['title']}")
    return 0
