"""`[events]` and `[[events.webhooks]]`: signed outbound events for SIEM and GRC tools.

Each webhook gets the kinds it names (all of them by default) as CloudEvents 1.0 documents,
signed per the Standard Webhooks specification with its `secret` (`whsec_` and the base64 of 24
to 64 random bytes, as the specification says), and with each of its `previous_secrets` while a
rotation is under way (one signature per secret in the header: a receiver still on an old one
keeps verifying). `[events]` holds how deliveries retry: the cap
of the exponential backoff, how long a receiver may stay down before an event is given up, and
the timeout of one request. Every check here raises a `ConfigError` naming the key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.core.webhooks import EVENT_KINDS
from gateway.settings.coerce import Coerce, coerce_all, duration, listing, string, strings

SECRET_PREFIX = "whsec_"
SECRET_BYTES = (24, 64)  # the specification's bounds for a secret's length
MAX_PREVIOUS = 3  # old secrets still signed with: a rotation in progress, not a history
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    url: str
    secret: str = field(repr=False)  # masked by check-config, never logged
    kinds: tuple[str, ...] = EVENT_KINDS
    name: str = ""  # how the dashboard and the outbox name it; derived from the URL when not given
    # the secrets being rotated out, newest first: every event is signed with these too
    previous_secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret an event is signed with: the current one, then the previous, newest first."""
        return (self.secret, *self.previous_secrets)

    def shown(self) -> dict[str, Any]:
        """For check-config: the secrets masked, the URL without its query or credentials."""
        out: dict[str, Any] = {"name": self.name, "url": shown_url(self.url), "secret": "***"}
        if self.previous_secrets:
            out["previous_secrets"] = ["***"] * len(self.previous_secrets)
        return out | {"kinds": list(self.kinds)}


@dataclass(frozen=True, slots=True)
class EventsSettings:
    webhooks: tuple[WebhookSettings, ...] = ()
    give_up_after: timedelta = timedelta(hours=24)  # an event undelivered this long after it happened
    max_backoff: timedelta = timedelta(minutes=10)  # the cap of the exponential backoff between tries
    timeout: timedelta = timedelta(seconds=10)  # one request to a receiver, connect to last byte

    def secrets(self) -> list[str]:
        """Every webhook secret, current and previous: for the log redactor."""
        return [s for hook in self.webhooks for s in hook.secrets]


def shown_url(url: str) -> str:
    """The URL as pages and logs show it: no user, password, query or fragment (they may hold a
    receiver's own token)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def check_secret(key: str, secret: str) -> None:
    if not secret.startswith(SECRET_PREFIX):
        raise ConfigError(key, f"expected {SECRET_PREFIX}<base64> (a Standard Webhooks secret)")
    body = secret[len(SECRET_PREFIX) :]
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(key, f"not base64 after {SECRET_PREFIX}") from None
    low, high = SECRET_BYTES
    if not low <= len(raw) <= high:
        raise ConfigError(key, f"expected {low} to {high} random bytes after {SECRET_PREFIX}, got {len(raw)}")


def check_url(key: str, url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise ConfigError(key, f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ConfigError(key, "expected an http:// or https:// URL")
    if not parts.hostname:
        raise ConfigError(key, "the URL has no host")


def _default_name(url: str) -> str:
    """A stable name for a webhook given none: its host and a hash of its URL, so that events
    queued for it still find it after a restart, and never reach another receiver."""
    host = re.sub(r"[^A-Za-z0-9_.-]", "-", urlsplit(url).hostname or "webhook")[:40]
    return f"{host}-{hashlib.sha256(url.encode()).hexdigest()[:8]}"


WEBHOOK_KEYS: dict[str, Coerce] = {
    "url": string,
    "secret": string,
    "kinds": strings,
    "name": string,
    "previous_secrets": strings,
}


def _previous(key: str, secret: str, previous: tuple[str, ...]) -> tuple[str, ...]:
    if len(previous) > MAX_PREVIOUS:
        raise ConfigError(key, f"at most {MAX_PREVIOUS} (drop a secret once its receivers moved on)")
    for i, old in enumerate(previous):
        check_secret(f"{key}[{i}]", old)
        if old == secret or old in previous[:i]:
            raise ConfigError(f"{key}[{i}]", "the same secret twice (the current one goes in secret alone)")
    return previous


def _webhook(key: str, raw: Any) -> WebhookSettings:
    values = coerce_all(key, raw, WEBHOOK_KEYS)
    for required in ("url", "secret"):
        if not values.get(required):
            raise ConfigError(f"{key}.{required}", "required")
    check_url(f"{key}.url", values["url"])
    check_secret(f"{key}.secret", values["secret"])
    previous = _previous(f"{key}.previous_secrets", values["secret"], values.get("previous_secrets", ()))
    kinds = values.get("kinds", EVENT_KINDS)
    if not kinds:
        raise ConfigError(f"{key}.kinds", "name at least one kind (or leave it out for all)")
    for kind in kinds:
        if kind not in EVENT_KINDS:
            raise ConfigError(f"{key}.kinds", f"unknown kind {kind!r} (known: {', '.join(EVENT_KINDS)})")
    name = values.get("name") or _default_name(values["url"])
    if not _NAME.match(name):
        raise ConfigError(f"{key}.name", "letters, digits, '_', '.' and '-' only, at most 64")
    return WebhookSettings(values["url"], values["secret"], tuple(dict.fromkeys(kinds)), name, previous)


def webhooks(key: str, v: Any) -> tuple[WebhookSettings, ...]:
    """`[[events.webhooks]]` in the file, or from the environment a TOML array of inline tables
    (`HITL_EVENTS_WEBHOOKS='[{url = "...", secret = "whsec_...", previous_secrets = ["whsec_..."]}]'`)."""
    out = tuple(_webhook(f"{key}[{i}]", raw) for i, raw in enumerate(listing(key, v)))
    seen: set[str] = set()
    for i, hook in enumerate(out):
        if hook.name in seen:
            raise ConfigError(f"{key}[{i}].name", f"{hook.name!r} is given twice")
        seen.add(hook.name)
    return out


KEYS: dict[str, Coerce] = {
    "webhooks": webhooks,
    "give_up_after": duration,
    "max_backoff": duration,
    "timeout": duration,
}


def load_events(plain: Mapping[str, Any]) -> EventsSettings:
    return EventsSettings(**plain)


def check_events(events: EventsSettings, lease: timedelta) -> None:
    """`lease`: the outbox's claim on a row; a try must end well inside it (the outbox cuts a
    row's work at half its lease), or another replica could send the same event meanwhile."""
    if events.max_backoff < timedelta(seconds=1):
        raise ConfigError("events.max_backoff", "at least 1s")
    if events.give_up_after < events.max_backoff:
        raise ConfigError("events.give_up_after", "at least events.max_backoff")
    if not timedelta(seconds=1) <= events.timeout <= timedelta(minutes=5):
        raise ConfigError("events.timeout", "between 1s and 5m")
    if events.webhooks and events.timeout >= lease / 2:
        raise ConfigError("events.timeout", f"must be below half of store.lease ({lease.total_seconds():g}s)")


__all__ = [
    "KEYS",
    "MAX_PREVIOUS",
    "SECRET_PREFIX",
    "WEBHOOK_KEYS",
    "EventsSettings",
    "WebhookSettings",
    "check_events",
    "check_secret",
    "check_url",
    "load_events",
    "shown_url",
    "webhooks",
]
