"""What a channel plugin declares (`ChannelSpec`) and what it is given (`ChannelContext`).

A plugin is a package that exports one `ChannelSpec`: its kind, its config section and schema,
the syntax of its approver ids and addresses, `create(ctx)` for the channel itself, and any CLI
subcommands. The built-in ones live in `adapters/<kind>/`; others register under the entry-point
group `hitl_gateway.channels` (`gateway.delivery.registry`). docs/channels.md walks through one.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway.core.channels import Channel
from gateway.core.identity import IdSyntax
from gateway.settings.coerce import Coerce

if TYPE_CHECKING:
    import aiohttp

    from gateway.core.clock import Clock
    from gateway.core.tokens import TokenSigner
    from gateway.service.presses import Inbound


def _no_check(section: Any) -> None:
    return None


def _no_command_check(section: Any, public_url: str) -> None:
    return None


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    return None


def _approvers(section: Any) -> Iterable[object]:
    return tuple(getattr(section, "approvers", ()))


@dataclass(frozen=True, slots=True)
class Command:
    """A CLI subcommand, `hitl-gateway <kind> <name>`. `run` gets the started channel; with
    `background` the gateway's loops run meanwhile (e.g. a poller that also delivers cards).
    `check(section, public_url)` runs first, before anything starts: a ConfigError it raises is
    one line and exit 2. `run` returns 1 (one line) when the platform cannot be reached."""

    name: str
    help: str
    run: Callable[[argparse.Namespace, Channel], Awaitable[int]]
    arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments
    background: bool = False
    check: Callable[[Any, str], None] = _no_command_check


@dataclass(frozen=True, slots=True)
class ChannelSpec:
    """Everything the core knows about one kind of channel.

    - `settings(**values)` builds the section `[<kind>]` from the keys of `schema`, each coerced
      by its function (`gateway.settings.coerce` has them); `check(section)` raises ConfigError
      naming a key; `enabled(section)` says whether the channel is on; `secrets` are masked
      everywhere.
    - `identity`: the syntax and canonical form of an approver id (`<kind>:<id>`); `approvers`
      returns the section's allowlist of ids.
    - `target(text)`: an address's target in canonical form (`<kind>:<target>`), or ValueError.
    - `destinations`: the section's keys that list where agents may send cards (targets, each
      open to every agent, or `NAME:target` to agent NAME only); no key: no agent may send there.
    - `create(ctx)` builds the channel once the gateway starts.
    """

    kind: str
    summary: str
    settings: Callable[..., Any]
    schema: Mapping[str, Coerce]
    identity: IdSyntax
    target: Callable[[str], str]
    create: Callable[[ChannelContext], Channel]
    enabled: Callable[[Any], bool]
    check: Callable[[Any], None] = _no_check
    approvers: Callable[[Any], Iterable[object]] = _approvers
    destinations: tuple[str, ...] = ()
    secrets: frozenset[str] = frozenset()
    secret_patterns: tuple[str, ...] = ()  # regexes masked in every log line (e.g. a token format)
    quiet_loggers: tuple[str, ...] = ()  # the client library's loggers, kept at WARNING
    commands: tuple[Command, ...] = ()
    disabled_hint: str = ""  # what to set to turn the channel on, for the CLI's error
    sample: str = ""  # a commented-out `[<kind>]` section for `hitl-gateway init` to write


@dataclass(frozen=True, slots=True)
class ChannelContext:
    """What a channel gets instead of the whole runtime: its own settings section, the server's
    public URL (for links and webhooks), the signer, the clock, the inbound use cases (presses,
    reasons, de-duplication; `gateway.service.presses`), a shared HTTP client session, and
    who may decide on it (`approvers`, `decides`)."""

    kind: str
    settings: Any
    public_url: str
    signer: TokenSigner
    clock: Clock
    inbound: Inbound
    http: Callable[[], aiohttp.ClientSession]
    # Who may decide on this channel (canonical identities: its allowlist, else the `[people]`
    # identities of its kind); None: not known here (anyone listed by the core's check). A
    # channel where nobody may draws its cards without buttons.
    approvers: frozenset[str] | None = None

    @property
    def decides(self) -> bool:
        """Whether anyone may decide on this channel."""
        return self.approvers is None or bool(self.approvers)


__all__ = ["ChannelContext", "ChannelSpec", "Coerce", "Command"]
