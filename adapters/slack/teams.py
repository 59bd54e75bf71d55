"""The Slack workspaces whose members may press: `slack.team_ids`, else the one the bot token
belongs to (`auth.test`, asked at start and again until it answers).

A press is signed with the app's signing secret, which every workspace the app is installed in
shares; the user id alone does not say which workspace the presser is from. So a press names its
workspaces (`team.id`, and the presser's own `user.team_id`, which differs for a member of
another organisation in a shared channel) and each must be pinned. Until the gateway knows its
workspace, every press is refused: it fails closed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from gateway.plugin import DeliveryError

log = logging.getLogger("adapters.slack")
RETRY_SECONDS = 10.0  # how often auth.test is asked again while it fails (presses are refused meanwhile)


class Workspaces:
    def __init__(self, configured: Iterable[str], call: Callable[..., Awaitable[dict[str, Any]]]) -> None:
        self._configured = frozenset(t.upper() for t in configured)
        self._call = call
        self._known: frozenset[str] = frozenset()
        self._asked = -RETRY_SECONDS
        self._lock = asyncio.Lock()

    async def pinned(self) -> frozenset[str]:
        """The team ids whose members may press (empty: not known yet, so nobody)."""
        if self._configured:
            return self._configured
        if not self._known and time.monotonic() - self._asked >= RETRY_SECONDS:
            async with self._lock:
                if not self._known and time.monotonic() - self._asked >= RETRY_SECONDS:
                    self._asked = time.monotonic()
                    self._known = await self._ask()
        return self._known

    async def _ask(self) -> frozenset[str]:
        try:
            data = await self._call("auth.test")
        except DeliveryError as exc:
            log.warning(
                "slack: auth.test failed (%s): presses are refused until it answers, or set slack.team_ids", exc
            )
            return frozenset()
        team = data.get("team_id")
        if not isinstance(team, str) or not team:
            log.warning("slack: auth.test named no team_id: presses are refused; set slack.team_ids")
            return frozenset()
        log.info("slack: presses are taken from workspace %s (auth.test)", team)
        return frozenset({team.upper()})


def outsider(pinned: frozenset[str], teams: tuple[str, ...]) -> str | None:
    """Why a press naming `teams` is refused, or None when every one of them is pinned."""
    if not pinned:
        return "the gateway does not know its Slack workspace yet (auth.test failed; set slack.team_ids)"
    if not teams:
        return "the interaction names no Slack workspace"
    foreign = [t for t in teams if t not in pinned]
    return f"Slack workspace {foreign[0]} is not in slack.team_ids" if foreign else None


__all__ = ["Workspaces", "outsider"]
