"""A standing grant stands in for the person who made it, so it decides only what they could
decide now: not once they are no longer an approver (taken off `[web] approvers`, an operator
key removed from the config), and not a request they made themselves (`requested_by`: a
requester never decides their own request, four eyes). Before, the grant went on approving
under the granter's name whatever happened to them. On a SQLite file, through the service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from gateway.core.models import Approval, Outcome, Status
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.service.commands import Authority
from gateway.settings import Settings
from gateway.testing import FakeClock

SECOND = "second-operator-key-0123456789abcdef"
Make = Callable[..., AsyncIterator[Runtime]]


def _settings(factory: Callable[..., Settings], approvers: list[str], operators: dict[str, str]) -> Settings:
    return factory(
        web={"approvers": approvers},
        policies={"default": {"grants": ["1h"]}},
        security={"operators": operators},
    )


async def _suspend(rt: Runtime, run_id: str, **kw: Any) -> Approval:
    request = SuspendRequest(run_id, "charge", "Charge ACME", args={"amount": 5}, channels=("web",), **kw)
    approval, _ = await rt.service.suspend(request)
    return approval


async def _granted(rt: Runtime, actor: str, authority: Authority = Authority.APPROVER, **kw: Any) -> None:
    first = await _suspend(rt, "run-1", **kw)
    decided = await rt.service.decide(first.id, Outcome.APPROVE, actor, authority=authority, grant="1h")
    assert decided.status is Status.APPROVED
    assert (await _suspend(rt, "run-2", **kw)).status is Status.APPROVED  # the grant works


@pytest.fixture
async def runtimes(clock: FakeClock) -> AsyncIterator[Callable[[Settings], Any]]:
    started: list[Runtime] = []

    async def start(settings: Settings) -> Runtime:
        rt = Runtime(settings, clock=clock, owner="test")
        await rt.start(background=False)
        started.append(rt)
        return rt

    yield start
    for rt in reversed(started):
        await rt.stop()


async def test_a_grant_does_not_decide_its_granters_own_request(
    settings_factory: Callable[..., Settings], runtimes: Callable[[Settings], Any]
) -> None:
    rt = await runtimes(_settings(settings_factory, ["alice", "bob"], {"test": "t" * 32}))
    await _granted(rt, "web:alice", requested_by="web:bob")
    own = await _suspend(rt, "run-3", requested_by="web:alice")
    assert own.status is Status.WAITING, own.decision


async def test_a_grant_dies_with_its_granters_place_among_the_approvers(
    settings_factory: Callable[..., Settings], runtimes: Callable[[Settings], Any]
) -> None:
    before = await runtimes(_settings(settings_factory, ["alice", "bob"], {"test": "t" * 32}))
    await _granted(before, "web:alice")
    await before.stop()
    after = await runtimes(_settings(settings_factory, ["bob"], {"test": "t" * 32}))  # alice left
    assert (await _suspend(after, "run-3")).status is Status.WAITING


async def test_a_grant_dies_with_its_operators_key(
    settings_factory: Callable[..., Settings], runtimes: Callable[[Settings], Any]
) -> None:
    before = await runtimes(_settings(settings_factory, ["bob"], {"test": "t" * 32, "second": SECOND}))
    await _granted(before, "operator:second", Authority.OPERATOR)
    await before.stop()
    after = await runtimes(_settings(settings_factory, ["bob"], {"test": "t" * 32}))  # second's key removed
    assert (await _suspend(after, "run-3")).status is Status.WAITING


async def test_a_grant_does_not_decide_a_suspend_whose_policy_needs_two(
    settings_factory: Callable[..., Settings], runtimes: Callable[[Settings], Any]
) -> None:
    """One person cannot make a standing decision that needs two: where the suspend's policy
    asks for a quorum, a grant made under a one-person policy decides nothing."""
    settings = settings_factory(
        web={"approvers": ["alice", "bob"]},
        policies={"default": {"grants": ["1h"]}, "two": {"quorum": 2}},
    )
    rt = await runtimes(settings)
    await _granted(rt, "web:alice")
    assert (await _suspend(rt, "run-3", policy="two")).status is Status.WAITING


async def test_a_grant_decides_only_suspends_whose_policy_offers_grants(
    settings_factory: Callable[..., Settings], runtimes: Callable[[Settings], Any]
) -> None:
    """An operator who takes `grants` off a policy stops the grants made under it (another policy
    still offering grants kept them deciding until they expired), and a suspend naming a policy
    that offers none is not decided by a grant made under one that did."""
    offering = {"default": {"grants": ["1h"]}, "plain": {"timeout": "1h"}, "other": {"grants": ["run"]}}
    before = await runtimes(settings_factory(web={"approvers": ["alice"]}, policies=offering))
    await _granted(before, "web:alice")
    assert (await _suspend(before, "run-3", policy="plain")).status is Status.WAITING  # before: approved
    await before.stop()
    withdrawn = offering | {"default": {"timeout": "1h"}}  # `grants` taken off the policy it was made under
    after = await runtimes(settings_factory(web={"approvers": ["alice"]}, policies=withdrawn))
    assert (await _suspend(after, "run-4")).status is Status.WAITING  # before: approved
