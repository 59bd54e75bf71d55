"""The e-mail channel's spec: its `[email]` section, addresses and approver ids.

A card goes to `email:<address>`; the person who follows its links decides as
`email:<address>` (which `email.approvers` must list). Importing this module is cheap: aiosmtplib
is imported only when the channel is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from gateway.core.errors import ConfigError
from gateway.core.identity import IdSyntax
from gateway.plugin import Channel, ChannelContext, ChannelSpec, boolean, duration, integer, string, strings

# An address as people write it: a local part of the common characters, '@', a domain of
# dot-separated labels. Case-insensitive: stored in lower case, so that two spellings are one person.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
ADDRESS = IdSyntax(
    rf"[A-Za-z0-9.!#$%&'*+/=?^_`{{|}}~-]{{1,64}}@{_LABEL}(?:\.{_LABEL})+",
    "an e-mail address like alice@example.org (case-insensitive)",
    str.lower,
)


@dataclass(frozen=True, slots=True)
class EmailSettings:
    host: str = ""  # the SMTP server; the channel is off while it is empty
    port: int = 587
    from_: str = ""  # `from` in the config: the sender address
    approvers: tuple[str, ...] = ()  # addresses allowed to decide (email:<address>); agents may mail them
    # More addresses agents may mail (for information: no links), each open to every agent, or
    # "NAME:<address>" to agent NAME only. Any other address in a suspend is refused.
    recipients: tuple[str, ...] = ()
    username: str = ""
    password: str = ""
    starttls: bool = True  # upgrade the connection (port 587); refuse to send if the server cannot
    tls: bool = False  # implicit TLS from the first byte (port 465)
    timeout: timedelta = timedelta(seconds=20)  # per SMTP command; under the outbox's half lease
    link_max_age: timedelta = timedelta(days=7)  # links live this long, or until the deadline if later

    @property
    def enabled(self) -> bool:
        return bool(self.host)


def address(text: str) -> str:
    """An address target in canonical (lower-case) form, or ValueError saying what is expected."""
    canonical = ADDRESS.canonical(text)
    if canonical is None or len(canonical) > 254:
        raise ValueError(f"expected {ADDRESS.hint}")
    return canonical


def _check(section: EmailSettings) -> None:
    if not section.enabled:
        return
    try:
        address(section.from_)
    except ValueError as exc:
        raise ConfigError("email.from", f"required when email.host is set: {exc}") from None
    if section.tls and section.starttls:
        raise ConfigError("email.tls", "set tls (implicit TLS, port 465) or starttls (port 587), not both")
    if not 0 < section.port <= 65535:
        raise ConfigError("email.port", f"{section.port} is not a TCP port")
    if bool(section.username) != bool(section.password):
        raise ConfigError("email.password", "set both email.username and email.password, or neither")


def _create(ctx: ChannelContext) -> Channel:
    try:
        from adapters.email.channel import EmailChannel
    except ImportError as exc:  # the `email` extra is not installed
        raise ConfigError(
            "email.host", f"the e-mail channel needs the extra `email` ({exc}): pip install ./sdk '.[email]'"
        ) from None
    return EmailChannel(ctx)


SPEC = ChannelSpec(
    kind="email",
    summary="E-mail: cards with one-time Approve and Reject links, sent over SMTP",
    settings=EmailSettings,
    schema={
        "host": string,
        "port": integer,
        "from": string,
        "approvers": strings,
        "recipients": strings,
        "username": string,
        "password": string,
        "starttls": boolean,
        "tls": boolean,
        "timeout": duration,
        "link_max_age": duration,
    },
    identity=ADDRESS,
    target=address,
    destinations=("approvers", "recipients"),
    create=_create,
    enabled=lambda section: section.enabled,
    check=_check,
    secrets=frozenset({"password"}),
    quiet_loggers=("aiosmtplib",),
    sample=(
        "# [email]                    # docs/channels.md: cards as mails with one-time Approve/Reject links\n"
        '# host = "smtp.example.com"\n'
        "# port = 587\n"
        '# from = "approvals@example.com"\n'
        "# starttls = true\n"
        '# approvers = ["alice@example.com"]\n'
    ),
)

__all__ = ["ADDRESS", "SPEC", "EmailSettings", "address"]
