"""`[webpush]`: Web Push to the web inbox's approvers (their phones and browsers).

The VAPID key pair identifies the gateway to the browsers' push services: `public_key` is the
uncompressed P-256 point (base64url, 65 bytes) a browser subscribes with, `private_key` the
private scalar (base64url, 32 bytes) that signs each push's JWT, and `subject` a `mailto:` or
`https:` contact the push service may use. `hitl-gateway init` writes a fresh pair.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, duration, string


@dataclass(frozen=True, slots=True)
class WebPushSettings:
    public_key: str = ""
    private_key: str = ""  # a secret: masked by check-config, never logged
    subject: str = ""  # mailto:ops@example.com or https://example.com/contact
    ttl: timedelta = timedelta(hours=1)  # how long a push service keeps a push for an offline device
    link_max_age: timedelta = timedelta(days=1)  # a push's Approve/Reject links, or until the deadline
    timeout: timedelta = timedelta(seconds=10)  # per request to a push service

    @property
    def enabled(self) -> bool:
        return bool(self.public_key and self.private_key)


KEYS: dict[str, Coerce] = {
    "public_key": string,
    "private_key": string,
    "subject": string,
    "ttl": duration,
    "link_max_age": duration,
    "timeout": duration,
}
SECRETS = frozenset({"private_key"})


def b64url(data: str) -> bytes:
    """Decode base64url with or without its padding (ValueError when it is not)."""
    try:
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None


def generate_keys() -> tuple[str, str]:
    """A fresh VAPID key pair: (public_key, private_key), base64url without padding."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    return b64(point), b64(key.private_numbers().private_value.to_bytes(32, "big"))


def sample(installed: bool) -> str:
    """The `[webpush]` section `hitl-gateway init` writes, with a fresh key pair: on when the
    `webpush` extra is installed, else commented out."""
    public, private = generate_keys()
    on = "" if installed else "# "
    need = "" if installed else "# Web Push needs the extra: pip install ./sdk '.[webpush]', then uncomment\n"
    return (
        f"{need}{on}[webpush]                   # docs/web.md: approvers get each card as a push on their phone\n"
        f'{on}public_key = "{public}"\n'
        f'{on}private_key = "{private}"   # a secret, like secret_keys\n'
        f'{on}subject = "mailto:admin@example.com"   # your contact: push services may write to it\n'
    )


# Names that reach nobody (RFC 2606 and RFC 6761): `init` writes one, for the operator to replace.
_NOBODY = frozenset({"example.com", "example.net", "example.org", "localhost"})
_NOBODY_TLDS = (".example", ".invalid", ".test", ".localhost")


def placeholder_subject(subject: str) -> bool:
    """Whether `subject` names no one a push service could write to (`mailto:admin@example.com`)."""
    if subject.startswith("mailto:"):
        host = subject.removeprefix("mailto:").rpartition("@")[2]
    else:
        host = urlsplit(subject).hostname or ""
    host = host.strip().rstrip(".").lower()
    return host in _NOBODY or host.endswith(_NOBODY_TLDS) or any(host.endswith(f".{d}") for d in _NOBODY)


def check_webpush(push: WebPushSettings) -> None:
    if not (push.public_key or push.private_key):
        return
    for key, size in (("public_key", 65), ("private_key", 32)):
        value = getattr(push, key)
        try:
            ok = len(b64url(value)) == size
        except ValueError:
            ok = False
        if not ok:
            raise ConfigError(
                f"webpush.{key}", f"expected {size} bytes in base64url (`hitl-gateway init` writes a key pair)"
            )
    if not b64url(push.public_key).startswith(b"\x04"):
        raise ConfigError("webpush.public_key", "expected an uncompressed P-256 point (it starts with 0x04)")
    if not push.subject.startswith(("mailto:", "https://")):
        raise ConfigError("webpush.subject", "required: a mailto: address or an https: URL push services may contact")
    if not timedelta(minutes=1) <= push.ttl <= timedelta(days=28):
        raise ConfigError("webpush.ttl", "between 1m and 28d")


__all__ = ["KEYS", "SECRETS", "WebPushSettings", "b64url", "check_webpush", "generate_keys", "sample"]
