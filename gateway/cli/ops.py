"""The operator commands' one interface (`Operations`), on the local store or over HTTP.

`approvals`, `jobs`, `delegations` and `events` are written once over it: `LocalOps` goes through
the application layer (a started Runtime, as every other command), `gateway.cli.remote.RemoteOps`
through the HTTP API with an operator key. Both return the API's JSON shapes, so that both print the same."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from gateway.cli.common import with_runtime
from gateway.core.models import JobStatus, Outcome, Status
from gateway.service.commands import Authority
from gateway.settings import Settings

CLI_OPERATOR = "operator:cli"  # who the local CLI's decisions, cancels, retries and re-sends are recorded as
Json = dict[str, Any]


class Operations(Protocol):
    async def approvals(self, status: str | None, run_id: str | None, limit: int) -> list[Json]: ...
    async def show(self, approval_id: str) -> Json: ...  # the view with its `events`
    async def decide(self, approval_id: str, outcome: str, by: str | None, comment: str | None) -> Json: ...
    async def decide_many(self, ids: list[str], outcome: str, comment: str | None) -> list[Json]: ...
    async def cancel(self, approval_id: str, by: str | None, reason: str | None) -> Json: ...
    async def jobs(self, status: str | None, limit: int) -> list[Json]: ...
    async def retry(self, approval_id: str, by: str | None) -> Json: ...
    async def delegations(self, of: str | None, everything: bool) -> list[Json]: ...
    async def delegation(self, delegation_id: str) -> Json: ...  # with its `events`
    async def delegate(self, body: Json) -> Json: ...  # the body of `POST /v1/delegations`
    async def revoke_delegation(self, delegation_id: str) -> Json: ...
    async def resend_events(self, approval_id: str, body: Json) -> Json: ...  # the body of `events/resend`


class LocalOps:
    """On the store, through the application layer, as `operator:cli`."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt

    async def approvals(self, status: str | None, run_id: str | None, limit: int) -> list[Json]:
        items = await self.rt.reads.approvals(status=Status(status) if status else None, run_id=run_id, limit=limit)
        return [a.to_api() for a in items]

    async def show(self, approval_id: str) -> Json:
        approval = await self.rt.service.get(approval_id)
        events = [e.to_api() for e in await self.rt.reads.events(approval.id)]
        return {**await self.rt.service.view(approval), "events": events}

    async def decide(self, approval_id: str, outcome: str, by: str | None, comment: str | None) -> Json:
        approval = await self.rt.service.decide(
            approval_id,
            Outcome(outcome),
            CLI_OPERATOR,
            comment=comment,
            channel="cli",
            authority=Authority.OPERATOR,
            on_behalf_of=by,
        )
        view: Json = await self.rt.service.view(approval)
        return view

    async def decide_many(self, ids: list[str], outcome: str, comment: str | None) -> list[Json]:
        """Each its own decision (gateway.service.batch), as `POST /v1/approvals/decisions`."""
        from gateway.service.batch import Batch, BatchItem, decide_each

        items = [BatchItem(i, Outcome(outcome), comment) for i in ids]
        results = await decide_each(self.rt.service, Batch(CLI_OPERATOR, Authority.OPERATOR, "cli"), items)
        return [r.to_api() for r in results]

    async def cancel(self, approval_id: str, by: str | None, reason: str | None) -> Json:
        approval = await self.rt.service.cancel(approval_id, CLI_OPERATOR, reason, on_behalf_of=by)
        view: Json = await self.rt.service.view(approval)
        return view

    async def jobs(self, status: str | None, limit: int) -> list[Json]:
        return [j.to_api() for j in await self.rt.jobs.find(JobStatus(status) if status else None, limit)]

    async def retry(self, approval_id: str, by: str | None) -> Json:
        from gateway.service.jobs import RetryJob

        job: Json = (await self.rt.jobs.retry(RetryJob(approval_id, CLI_OPERATOR, by))).to_api()
        return job

    async def delegations(self, of: str | None, everything: bool) -> list[Json]:
        items: list[Json] = await self.rt.service.delegations.views(live=not everything, of=of)
        return items

    async def delegation(self, delegation_id: str) -> Json:
        view: Json = await self.rt.service.delegations.trail(delegation_id)
        return view

    async def delegate(self, body: Json) -> Json:
        """As `POST /v1/delegations` by an operator: the same body, checked by the same contract."""
        from gateway.service.delegations import Delegate

        delegations = self.rt.service.delegations
        view: Json = delegations.view(await delegations.create(Delegate.by_operator(body, CLI_OPERATOR)))
        return view

    async def revoke_delegation(self, delegation_id: str) -> Json:
        delegations = self.rt.service.delegations
        view: Json = delegations.view(await delegations.revoke(delegation_id, CLI_OPERATOR, operator=True))
        return view

    async def resend_events(self, approval_id: str, body: Json) -> Json:
        """As `POST /v1/approvals/{id}/events/resend` by an operator: the same body, checked by
        the same contract, sent again by the same use case."""
        from gateway.service.events import ResendEvents

        resent = await self.rt.webhooks.resend(ResendEvents.by_operator(approval_id, body, CLI_OPERATOR))
        answer: Json = resent.to_api()
        return answer


async def with_ops(
    args: argparse.Namespace, settings: Settings | None, fn: Callable[[Operations], Awaitable[int]]
) -> int:
    """`fn` on the server named by `--url` (args.url, set by the entry point), else on the store."""
    if args.url:
        from gateway.cli.remote import RemoteOps

        async with RemoteOps(args.url, args.operator_key) as remote:
            return await fn(remote)
    assert settings is not None  # the entry point loads the config when there is no --url
    return await with_runtime(settings, lambda rt: fn(LocalOps(rt)))
