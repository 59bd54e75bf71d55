"""Each channel plugin's `[<kind>]` section, built and checked by the plugin's own spec.

The specs are given to the loader by the entry point (`gateway.config` passes the installed ones,
`gateway.delivery.registry`): settings never imports the registry or a plugin, so it stays below
the code that uses it. `ChannelSchema` is the part of a `ChannelSpec` read here and by the code
that reads the settings (`gateway.delivery.spec.ChannelSpec` has it).
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from gateway.core.errors import ConfigError
from gateway.core.identity import NAME_RE, IdSyntax
from gateway.settings.coerce import Coerce, coerce_all


class ChannelSchema(Protocol):
    """What settings needs of a channel plugin: see `gateway.delivery.spec.ChannelSpec`."""

    @property
    def schema(self) -> Mapping[str, Coerce]: ...
    @property
    def settings(self) -> Callable[..., Any]: ...
    @property
    def check(self) -> Callable[[Any], None]: ...
    @property
    def enabled(self) -> Callable[[Any], bool]: ...
    @property
    def approvers(self) -> Callable[[Any], Iterable[object]]: ...
    @property
    def identity(self) -> IdSyntax: ...
    @property
    def target(self) -> Callable[[str], str]: ...
    @property
    def destinations(self) -> tuple[str, ...]: ...
    @property
    def secrets(self) -> frozenset[str]: ...
    @property
    def secret_patterns(self) -> tuple[str, ...]: ...
    @property
    def quiet_loggers(self) -> tuple[str, ...]: ...
    @property
    def create(self) -> Callable[[Any], Any]: ...  # the runtime builds the channel with it


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    """One installed channel kind: its spec and its `[<kind>]` section."""

    spec: ChannelSchema
    section: Any

    @property
    def enabled(self) -> bool:
        return bool(self.spec.enabled(self.section))


def attribute(key: str) -> str:
    """The attribute of a section that holds `key`: a Python keyword (`from`) gets a trailing
    underscore (`from_`), as PEP 8 has it."""
    return f"{key}_" if keyword.iskeyword(key) else key


def destination_entry(entry: object, target: Callable[[str], str] | None = None) -> tuple[str | None, str]:
    """A configured destination: (None, target) for one open to every agent, or (NAME, target)
    for `NAME:target`, open to the agent NAME only. With the kind's `target` syntax, an entry that
    is a target as a whole (a kind whose ids hold ':') is open to every agent."""
    text = str(entry)
    if target is not None and _is_target(target, text):
        return None, text
    name, sep, target_text = text.partition(":")
    if sep and NAME_RE.fullmatch(name):
        return name.lower(), target_text
    return None, text


def _is_target(target: Callable[[str], str], text: str) -> bool:
    try:
        target(text)
    except ValueError:
        return False
    return True


def load_channels(
    raw: Mapping[str, Any], specs: Mapping[str, ChannelSchema], check: bool = True
) -> dict[str, ChannelConfig]:
    """Each installed channel's section, built by its spec and checked by it (unless `check` is
    false), and its allowlist checked against the spec's id syntax."""
    out: dict[str, ChannelConfig] = {}
    for kind, spec in specs.items():
        values = {attribute(k): v for k, v in coerce_all(kind, raw.get(kind, {}), spec.schema).items()}
        config = ChannelConfig(spec, spec.settings(**values))
        if check:
            spec.check(config.section)
        for i, ident in enumerate(spec.approvers(config.section)):
            if not str(ident).startswith("group:") and spec.identity.canonical(str(ident)) is None:
                raise ConfigError(f"{kind}.approvers[{i}]", f"expected {spec.identity.hint}")
        _check_destinations(kind, spec, config.section)
        out[kind] = config
    return out


def _check_destinations(kind: str, spec: ChannelSchema, section: Any) -> None:
    """Each destination a target of its kind (`NAME:target` for one agent's only)."""
    for key in spec.destinations:
        for i, entry in enumerate(getattr(section, attribute(key))):
            try:
                spec.target(destination_entry(entry, spec.target)[1])
            except ValueError as exc:
                raise ConfigError(f"{kind}.{key}[{i}]", str(exc)) from None


__all__ = ["ChannelConfig", "ChannelSchema", "attribute", "destination_entry", "load_channels"]
