"""`hitl-gateway jobs list|retry`: resume jobs, on the store or, with `--url`, over the HTTP API."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from gateway.cli.approvals import RAW, REMOTE
from gateway.cli.common import dump, table
from gateway.cli.ops import Operations, with_ops
from gateway.cli.present import job_rows
from gateway.core.models import JobStatus
from gateway.settings import Settings


def add_parser(sub: Any) -> None:
    jobs = sub.add_parser(
        "jobs",
        help="list resume jobs, run a failed one again",
        description=f"List resume jobs and run a failed one again. {REMOTE}",
        epilog="examples:\n  hitl-gateway jobs list --status failed\n  hitl-gateway jobs retry APPROVAL_ID",
        formatter_class=RAW,
    )
    actions = jobs.add_subparsers(dest="action", required=True)
    ls = actions.add_parser(
        "list",
        help="resume jobs: approval id, status, worker, attempts, age, last error",
        description=f"Resume jobs, newest first, named by their approval's id. {REMOTE}",
        epilog="example:\n  hitl-gateway jobs list --status failed",
        formatter_class=RAW,
    )
    ls.add_argument("--status", choices=[s.value for s in JobStatus])
    ls.add_argument("--limit", type=int, default=50)
    retry = actions.add_parser(
        "retry",
        help="requeue the failed resume job of an approval",
        description=f"Requeue the failed resume job of an approval: the gateway's worker runs it again. {REMOTE}",
        epilog="example:\n  hitl-gateway jobs retry APPROVAL_ID --by alice",
        formatter_class=RAW,
    )
    retry.add_argument("id", help="the approval id")
    retry.add_argument("--by", help="whom you act for (kept as on_behalf_of)")
    for parser in (ls, retry):
        parser.add_argument("--json", action="store_true", help="print the API's JSON (for scripts)")
    jobs.set_defaults(handler=run, remote=True)


async def run(args: argparse.Namespace, settings: Settings | None) -> int:
    return await with_ops(args, settings, lambda ops: _act(args, ops))


async def _act(args: argparse.Namespace, ops: Operations) -> int:
    if args.action == "list":
        items = await ops.jobs(args.status, args.limit)
        if args.json:
            dump({"items": items})
        else:
            table(*job_rows(items, datetime.now(UTC)))
        return 0
    job = await ops.retry(args.id, args.by)
    if args.json:
        dump(job)
    else:
        print(f"{job['approval_id']}  {job['status']}: the gateway's worker will run it again")
    return 0
