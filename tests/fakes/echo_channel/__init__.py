"""A third-party channel, as a package outside the gateway would write it (tests only).

Cards are JSON lines appended to the file `[echo] path`; a press arrives as a POST to
/webhooks/echo. It uses only the public plugin surface: ChannelSpec, ChannelContext, the press
use case and the outbox contract. The test installs it with a dist-info whose entry point is in
the group `hitl_gateway.channels`; nothing in gateway/ or adapters/ knows it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from gateway.core.identity import IdSyntax
from gateway.core.models import Outcome
from gateway.plugin import (
    Attempt,
    Channel,
    ChannelBase,
    ChannelContext,
    ChannelSpec,
    Command,
    OutgoingCard,
    Press,
    string,
    strings,
)


@dataclass(frozen=True, slots=True)
class EchoSettings:
    path: str = ""
    approvers: tuple[str, ...] = ()
    rooms: tuple[str, ...] = ()  # where agents may send cards


class EchoChannel(ChannelBase):
    kind = "echo"
    resend_unknown = True

    def __init__(self, ctx: ChannelContext) -> None:
        self.ctx = ctx
        self.path = Path(ctx.settings.path)
        self.posts = 0

    def _write(self, op: str, card: OutgoingCard) -> None:
        line = {"op": op, "target": card.target, "approval": card.approval.id, "status": card.approval.status.value}
        with self.path.open("a") as out:
            out.write(json.dumps(line) + "\n")

    async def post_card(self, card: OutgoingCard, attempts: Sequence[Attempt]) -> str:
        self._write("post", card)
        self.posts += 1
        return f"{card.target}:{self.posts}"

    async def update_card(self, card: OutgoingCard) -> None:
        self._write("update", card)

    async def send_reminder(self, card: OutgoingCard) -> None:
        self._write("remind", card)

    def routes(self) -> Sequence[web.AbstractRouteDef]:
        return (web.post("/webhooks/echo", self.press),)

    async def press(self, request: web.Request) -> web.Response:
        body = await request.json()
        verdict = await self.ctx.inbound.press(
            Press(body["approval_id"], Outcome(body["outcome"]), f"echo:{body['user']}", f"echo:{body['room']}")
        )
        return web.json_response({"result": verdict.result.value, "text": verdict.text()})


async def _ping(args: argparse.Namespace, channel: Channel) -> int:
    assert isinstance(channel, EchoChannel)
    print(f"pong from {args.who} via {channel.path.name}")
    return 0


def _ping_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--who", default="echo")


def _create(ctx: ChannelContext) -> Channel:
    return EchoChannel(ctx)


SPEC = ChannelSpec(
    kind="echo",
    summary="A test channel that writes cards to a file",
    settings=EchoSettings,
    schema={"path": string, "approvers": strings, "rooms": strings},
    identity=IdSyntax(r"[a-z0-9]{1,32}", "lower-case letters and digits"),
    target=lambda target: target,
    destinations=("rooms",),
    create=_create,
    enabled=lambda section: bool(section.path),
    commands=(Command("ping", "print pong", _ping, _ping_arguments),),
)
