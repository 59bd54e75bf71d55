"""The Teams channel's spec: its `[teams]` section, Entra object ids and conversation addresses.

Importing this module is cheap: PyJWT (the `teams` extra) is imported only when the channel is
created.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.core.errors import ConfigError
from gateway.core.identity import IdSyntax
from gateway.plugin import Channel, ChannelContext, ChannelSpec, string, strings

# Teams conversation ids: '19:abc…@thread.tacv2' (a channel), '19:…@thread.v2' (a group chat or a
# meeting), 'a:1x…' (a personal chat): one ':' after the prefix. A thread's ';messageid=…' suffix
# is not part of the address. In `conversations`, 'NAME:19:abc…' opens one to agent NAME only.
_CONVERSATION_RE = re.compile(r"(?:19|a):[A-Za-z0-9@._=-]{1,290}", re.ASCII)
_GUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
_GUID_RE = re.compile(_GUID, re.ASCII)
OPENID_METADATA = "https://login.botframework.com/v1/.well-known/openidconfiguration"
ISSUER = "https://api.botframework.com"
TOKEN_URL = "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token"
SERVICE_URL = "https://smba.trafficmanager.net/teams/"


@dataclass(frozen=True, slots=True)
class TeamsSettings:
    app_id: str = ""  # the bot's Microsoft App ID: the audience of the tokens Teams sends
    app_password: str = ""  # its client secret, for the Bot Connector's token
    # The tenants whose people may press (Entra tenant ids); required: nobody else may.
    tenant_ids: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()  # Entra object ids of the people who may decide
    # Where agents may send cards: conversation ids, each open to every agent, or "NAME:<id>" to
    # agent NAME only. Any other conversation in a suspend is refused.
    conversations: tuple[str, ...] = ()
    openid_metadata: str = OPENID_METADATA
    issuer: str = ISSUER
    token_url: str = TOKEN_URL  # single-tenant bots: https://login.microsoftonline.com/<tenant>/oauth2/v2.0/token
    service_url: str = SERVICE_URL  # the Bot Connector the cards are posted through


def _enabled(section: TeamsSettings) -> bool:
    return bool(section.app_id)  # off while the app id is empty


def _check(section: TeamsSettings) -> None:
    for i, tenant in enumerate(section.tenant_ids):
        if not _GUID_RE.fullmatch(tenant):
            raise ConfigError(f"teams.tenant_ids[{i}]", "an Entra tenant id is a GUID")
    if not _enabled(section):
        return
    if not section.app_password:
        raise ConfigError("teams.app_password", "required when teams.app_id is set (the bot's client secret)")
    if not section.tenant_ids:
        raise ConfigError("teams.tenant_ids", "name the Entra tenant(s) whose people may press (a GUID each)")
    for key in ("openid_metadata", "token_url", "service_url"):
        if not str(getattr(section, key)).startswith(("https://", "http://")):
            raise ConfigError(f"teams.{key}", "an http(s) URL")


def conversation_target(text: str) -> str:
    """A conversation id ('19:abc@thread.tacv2'), without a thread's ';messageid=' suffix."""
    text = text.split(";", 1)[0]
    if not _CONVERSATION_RE.fullmatch(text):
        raise ValueError("a Teams conversation id looks like 19:abc…@thread.tacv2")
    return text


def _create(ctx: ChannelContext) -> Channel:
    try:
        from adapters.teams.channel import TeamsChannel
    except ImportError as exc:  # the `teams` extra is not installed
        raise ConfigError("teams.app_id", f"needs the extra `teams` ({exc}): pip install ./sdk '.[teams]'") from None
    return TeamsChannel(ctx)


SPEC = ChannelSpec(
    kind="teams",
    summary="Microsoft Teams bot: Adaptive Cards with Universal Actions",
    settings=TeamsSettings,
    schema={
        "app_id": string,
        "app_password": string,
        "tenant_ids": strings,
        "approvers": strings,
        "conversations": strings,
        "openid_metadata": string,
        "issuer": string,
        "token_url": string,
        "service_url": string,
    },
    # Entra object ids (GUIDs), lower case
    identity=IdSyntax(_GUID, "an Entra object id (a GUID) like 8f0e…-…", str.lower),
    target=conversation_target,
    destinations=("conversations",),
    create=_create,
    enabled=_enabled,
    check=_check,
    secrets=frozenset({"app_password"}),
    quiet_loggers=("jwt",),
    disabled_hint="set teams.app_id, teams.app_password and teams.tenant_ids",
    sample=(
        "# [teams]                    # docs/teams.md: Adaptive Cards in a team's channel\n"
        '# app_id = ""                # the Azure Bot\'s Microsoft App ID\n'
        '# app_password = ""          # its client secret\n'
        '# tenant_ids = ["<tenant-guid>"]\n'
        '# approvers = ["<entra-object-id>"]\n'
        '# conversations = ["19:abc@thread.tacv2"]   # where agents may send cards\n'
    ),
)

__all__ = ["SPEC", "TeamsSettings", "conversation_target"]
