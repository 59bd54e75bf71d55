"""A real SMTP server (aiosmtpd) on loopback, in the test's event loop, that keeps every mail.

`refuse` scripts the next answers to RCPT TO (e.g. "421 4.3.2 try later", "550 5.1.1 no such
user"); each is used once. Mails are parsed with the standard library, as a mail client would.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import re
from email.message import EmailMessage
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

LINK_RE = re.compile(r"https?://\S+/email/links/\S+")


class Inbox:
    def __init__(self) -> None:
        self.mails: list[EmailMessage] = []
        self.refuse: list[str] = []
        self.rcpts = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        self.rcpts += 1
        if self.refuse:
            return self.refuse.pop(0)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.content if isinstance(envelope.content, bytes) else str(envelope.content).encode()
        parsed: Any = email.message_from_bytes(content, policy=email.policy.default)
        self.mails.append(parsed)
        return "250 2.0.0 accepted"

    async def start(self) -> Inbox:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: SMTP(self, hostname="localhost"), "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.mails if m["To"] == address]


def text_of(mail: EmailMessage) -> str:
    part = mail.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())  # type: ignore[attr-defined]


def links_of(mail: EmailMessage) -> dict[str, str]:
    """{'approve': url, 'reject': url} from the text part."""
    found: dict[str, str] = {}
    for line in text_of(mail).splitlines():
        for verb in ("Approve", "Reject"):
            if line.startswith(f"{verb}:"):
                (url,) = LINK_RE.findall(line)
                found[verb.lower()] = url
    return found
