"""Slack presses count only from the operator's workspaces.

Finding covered (it failed on main before the fix):
- "Slack's workspace is not checked": a correctly signed press by `U222` with `team.id = T_OTHER`
  approved. The signing secret is the app's, shared by every workspace it is installed in, and a
  member id says nothing about the workspace. Now a press names its workspaces (`team.id` and the
  presser's `user.team_id`), and each must be in `slack.team_ids`, by default the team that
  `auth.test` reports at start. Another workspace's press, or a guest's from another organisation
  in a shared channel, is denied like a stranger's: bounded, no card edit, nothing decided.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.parse import make_ref
from tests.fakes.slack_api import TEAM_ID, block_actions, signed
from tests.security.channel_support import SIGNER, SLACK_CHANNEL, Stack, slack_section, stack_of, until

pytestmark = pytest.mark.subprocess
APPROVER = "U222"
OTHER = "T0OTHER"
KEPT = 5


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async for s in stack_of(tmp_path, lambda telegram, slack: slack_section(slack, [APPROVER])):
        yield s


@pytest.fixture
async def pinned(tmp_path: Path) -> AsyncIterator[Stack]:
    """`slack.team_ids` names another workspace than the bot's: it wins over auth.test."""
    config = lambda telegram, slack: slack_section(slack, [APPROVER]) + f'team_ids = ["{OTHER}"]\n'  # noqa: E731
    async for s in stack_of(tmp_path, config):
        yield s


async def _press(
    stack: Stack, approval_id: str, *, team: str | None, user_team: str | None, verb: str = "approve"
) -> int:
    ref = make_ref(SIGNER, approval_id)
    user: dict[str, Any] = {"id": APPROVER, "username": "u222"} | ({"team_id": user_team} if user_team else {})
    payload = block_actions(APPROVER, f"hitl:{verb}:{ref}", ref, response_url=stack.slack.response_url(APPROVER))
    payload["user"] = user
    payload.pop("team")
    if team:
        payload["team"] = {"id": team, "domain": "x"}
    body, headers = signed(payload, time.time())  # correctly signed: the app's one secret
    async with stack.http.post(f"{stack.url}/webhooks/slack/interactions", data=body, headers=headers) as resp:
        return resp.status


async def _card(stack: Stack) -> str:
    status, body = await stack.suspend(channels=[f"slack:{SLACK_CHANNEL}"], approvers=[f"slack:{APPROVER}"])
    assert status == 201, body
    await until(lambda: len(stack.slack.calls_to("chat.postMessage", ok_only=True)) >= 1)
    return str(body["id"])


async def test_a_press_from_another_workspace_is_denied_and_bounded(stack: Stack) -> None:
    approval_id = await _card(stack)
    updates = len(stack.slack.calls_to("chat.update"))
    foreign = [
        {"team": OTHER, "user_team": OTHER},  # another workspace the app is installed in
        {"team": TEAM_ID, "user_team": OTHER},  # a guest from another organisation in a shared channel
        {"team": None, "user_team": None},  # a payload that names no workspace
    ]
    for i in range(12):
        assert await _press(stack, approval_id, **foreign[i % 3]) == 200
    assert (await stack.approval(approval_id))["status"] == "waiting_approval"
    events = await stack.events(approval_id)
    denied = [e for e in events if e["kind"] == "denied"]
    assert len(denied) == KEPT and {e["actor"] for e in denied} == {f"slack:{APPROVER}"}
    assert OTHER in denied[0]["data"]["reason"]
    assert len(stack.slack.calls_to("chat.update")) == updates  # no card edit per press
    await until(lambda: len(stack.slack.replies(APPROVER)) >= 12)
    assert all("not authorised" in r["text"] for r in stack.slack.replies(APPROVER))
    # the same member from the pinned workspace decides
    assert await _press(stack, approval_id, team=TEAM_ID, user_team=TEAM_ID) == 200
    view = await stack.approval(approval_id)
    assert view["status"] == "approved" and view["decision"]["decided_by"] == f"slack:{APPROVER}"
    assert stack.slack.calls_to("auth.test", ok_only=True)  # the workspace was learnt from Slack


async def test_configured_team_ids_win_over_auth_test(pinned: Stack) -> None:
    approval_id = await _card(pinned)
    assert await _press(pinned, approval_id, team=TEAM_ID, user_team=TEAM_ID, verb="reject") == 200
    assert (await pinned.approval(approval_id))["status"] == "waiting_approval"  # the bot's own team is not listed
    assert await _press(pinned, approval_id, team=OTHER, user_team=OTHER) == 200
    assert (await pinned.approval(approval_id))["status"] == "approved"
