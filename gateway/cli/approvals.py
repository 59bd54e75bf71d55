"""`hitl-gateway approvals list|show|approve|reject|cancel`, on the store or, with `--url`, over
the HTTP API (gateway.cli.ops)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from gateway.cli.common import dump, table
from gateway.cli.ops import CLI_OPERATOR, Operations, with_ops
from gateway.cli.present import approval_rows, summary
from gateway.contract import BATCH_ITEMS
from gateway.core.models import Status
from gateway.settings import Settings

RAW = argparse.RawDescriptionHelpFormatter  # keeps the examples' lines as written
REMOTE = "With --url URL (or $HITL_URL) and an operator key, it acts on that gateway over HTTP."
_WHO = f"recorded as {CLI_OPERATOR}, or as the operator of the key with --url"


def remote_command(actions: Any, name: str, help: str, example: str) -> argparse.ArgumentParser:
    """A subcommand that also runs over --url, with its examples and a --json switch."""
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
    ls = remote_command(
        actions,
        "list",
        "approvals, newest first: id, status, title, age",
        "example:\n  hitl-gateway approvals list --status waiting_approval --limit 20",
    )
    ls.add_argument("--status", choices=[s.value for s in Status])
    ls.add_argument("--run-id")
    ls.add_argument("--limit", type=int, default=50)
    show = remote_command(
        actions,
        "show",
        "one approval: what was asked, where it stands, its cards, resume job and events",
        "examples:\n  hitl-gateway approvals show ID\n"
        "  hitl-gateway approvals show ID --json   # everything, as the API gives it",
    )
    show.add_argument("id")
    for verb in ("approve", "reject"):
        d = remote_command(
            actions,
            verb,
            f"{verb} an approval as an operator ({_WHO})",
            f"examples:\n  hitl-gateway approvals {verb} ID --by alice --comment 'checked the invoice'\n"
            f"  hitl-gateway approvals {verb} ID ID ID   # each its own decision; exit 1 if any is refused",
        )
        d.add_argument("ids", nargs="+", metavar="ID", help=f"at most {BATCH_ITEMS}")
        d.add_argument("--by", help="whom you act for (kept as on_behalf_of, never as who decided; one ID only)")
        d.add_argument("--comment")
    c = remote_command(
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
    elif len(args.ids) > 1:
        return await _decide_many(args, ops)
    else:
        view = await ops.decide(args.ids[0], args.action, args.by, args.comment)
    if args.json:
        dump(view)
    elif args.action == "show":
        print("\n".join(summary(view, now)))
    else:
        who = (view.get("decision") or {}).get("decided_by", "")
        print(f"{view['id']}  {view['status']}" + (f" by {who}" if who else "") + f"  {view['title']}")
    return 0


async def _decide_many(args: argparse.Namespace, ops: Operations) -> int:
    """Several IDs: each its own decision; a line per ID, exit 1 when any was refused."""
    if args.by:
        print("hitl-gateway: --by takes one ID (several are decided as yourself only)", file=sys.stderr)
        return 2
    if len(args.ids) > BATCH_ITEMS:
        print(f"hitl-gateway: at most {BATCH_ITEMS} IDs at once, got {len(args.ids)}", file=sys.stderr)
        return 2
    results = await ops.decide_many(args.ids, args.action, args.comment)
    if args.json:
        dump({"items": results})
    else:
        for r in results:
            error = r.get("error") or {}
            print(
                f"{r['id']}  {r['status']}"
                if r["ok"]
                else f"{r['id']}  refused  {error.get('code')}: {error.get('message')}"
            )
    return 0 if all(r["ok"] for r in results) else 1
