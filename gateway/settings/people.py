"""`[people.NAME]`: one person's identities across kinds (`web = "alice"`, `<kind> = id`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gateway.core.errors import ConfigError, ValidationError
from gateway.core.identity import BUILT_IN, Identities, IdSyntax
from gateway.settings.channels import ChannelSchema
from gateway.settings.coerce import Coerce, coerce_all, listing, strings
from gateway.settings.root import Settings


def identity_kinds(specs: Mapping[str, ChannelSchema]) -> dict[str, IdSyntax]:
    """Every identity kind: the built-in ones and each channel's."""
    return {**BUILT_IN, **{kind: spec.identity for kind, spec in specs.items()}}


def load_people(
    raw: Mapping[str, Any], kinds: Mapping[str, IdSyntax], declared: Iterable[str] = (), claimable: bool = False
) -> Identities:
    """`[people.NAME]`: `<kind> = id` (or a list of ids) per identity kind, and `[groups.NAME]`
    with `members` (identities, or person names). `declared`: group names that exist though no
    table lists them (`[web.oidc] group_map`); `claimable`: whether a sign-in may fill groups."""
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
    groups = {str(name): list(members) for name, members in _groups(raw).items()}
    for name in declared:
        groups.setdefault(name, [])
    try:
        return Identities(kinds, people, groups, claimable=groups if claimable else ())
    except ValidationError as exc:
        raise ConfigError(exc.field, exc.message.split(": ", 1)[-1]) from None


def _groups(raw: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """`[groups.NAME] members = [...]`, as written (Identities checks each member)."""
    group = raw.get("groups", {})
    if not isinstance(group, dict):
        raise ConfigError("groups", "expected a table of groups, [groups.NAME]")
    out = {}
    for name, body in group.items():
        if not isinstance(body, dict):
            raise ConfigError(f"groups.{name}", "expected a table like { members = ['web:alice', 'bob'] }")
        values = coerce_all(f"groups.{name}", body, GROUP_KEYS)
        out[name] = values.get("members", ())
    return out


GROUP_KEYS: dict[str, Coerce] = {"members": strings}


def check_group_names(settings: Settings) -> None:
    """Every `group:NAME` an allowlist, a policy's `escalate_to` or a rule names is a configured group."""
    named = [(f"web.{k}[{i}]", n) for k in ("approvers", "viewers") for i, n in enumerate(getattr(settings.web, k))]
    for kind, c in settings.channels.items():
        named += [(f"{kind}.approvers[{i}]", str(n)) for i, n in enumerate(c.spec.approvers(c.section))]
    for name, policy in settings.policies.items():
        named += [(f"policies.{name}.escalate_to[{i}]", t) for i, t in enumerate(policy.escalate_to)]
    for rule in settings.rules.rules:
        named += [(f"rule.{rule.name}.approvers[{i}]", a) for i, a in enumerate(rule.approvers)]
    for key, name in named:
        if name.startswith("group:") or key.startswith("rule."):
            try:
                settings.identities.approver(name, key)
            except ValidationError as exc:
                raise ConfigError(exc.field, exc.message.split(": ", 1)[-1]) from None


__all__ = ["GROUP_KEYS", "check_group_names", "identity_kinds", "load_people"]
