"""`[people.NAME]`: one person's identities across kinds (`web = "alice"`, `<kind> = id`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.errors import ConfigError, ValidationError
from gateway.core.identity import BUILT_IN, Identities, IdSyntax
from gateway.settings.channels import ChannelSchema
from gateway.settings.coerce import listing


def identity_kinds(specs: Mapping[str, ChannelSchema]) -> dict[str, IdSyntax]:
    """Every identity kind: the built-in ones and each channel's."""
    return {**BUILT_IN, **{kind: spec.identity for kind, spec in specs.items()}}


def load_people(raw: Mapping[str, Any], kinds: Mapping[str, IdSyntax]) -> Identities:
    """`[people.NAME]`: `<kind> = id` (or a list of ids) per identity kind."""
    group = raw.get("people", {})
    if not isinstance(group, dict):
        raise ConfigError("people", "expected a table of people, [people.NAME]")
    bare = Identities(kinds)
    people: dict[str, list[str]] = {}
    for name, body in group.items():
        if not isinstance(body, dict):
            raise ConfigError(f"people.{name}", "expected a table like { web = 'alice', <kind> = '<id>' }")
        ids = people.setdefault(name, [])
        for kind, value in body.items():
            key = f"people.{name}.{kind}"
            if kind not in kinds:
                raise ConfigError(key, f"unknown identity kind (known: {', '.join(sorted(kinds))})")
            for one in value if isinstance(value, list) else listing(key, value) if isinstance(value, str) else [value]:
                if isinstance(one, bool) or not isinstance(one, str | int):
                    raise ConfigError(key, f"expected an id (a string or a number), got {type(one).__name__}")
                try:
                    ids.append(bare.canonical(f"{kind}:{one}", key))
                except ValidationError as exc:
                    raise ConfigError(key, exc.message.split(": ", 1)[-1]) from None
    try:
        return Identities(kinds, people)
    except ValidationError as exc:
        raise ConfigError(exc.field, exc.message.split(": ", 1)[-1]) from None


__all__ = ["identity_kinds", "load_people"]
