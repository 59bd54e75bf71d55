"""`[audit]` (signed checkpoints), `[retention]` (how long raw args are kept) and `[redaction]`
(what is masked in the redacted view)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from gateway.core.audit import load_private_key
from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, boolean, duration, string, strings


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """The audit trail (docs/audit.md): the Ed25519 key that signs checkpoints (64 hex digits,
    a PEM key, or a file holding one; none: checkpoints are chained but unsigned), and how often
    the heads that moved are sealed into one."""

    signing_key: str = ""
    checkpoint_every: timedelta = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """`raw_after`: how long the sealed raw args and state of a decided approval are kept (None:
    forever). The events, their chain and the redacted view are always kept."""

    raw_after: timedelta | None = None


@dataclass(frozen=True, slots=True)
class RedactionSettings:
    defaults: bool = True  # mail addresses, Luhn-checked card numbers, phone numbers, IBANs, bearer tokens
    patterns: tuple[str, ...] = ()  # extra regular expressions, replaced by [redacted]


AUDIT_KEYS: dict[str, Coerce] = {"signing_key": string, "checkpoint_every": duration}
RETENTION_KEYS: dict[str, Coerce] = {"raw_after": duration}
REDACTION_KEYS: dict[str, Coerce] = {"defaults": boolean, "patterns": strings}


def check_audit(audit: AuditSettings, retention: RetentionSettings) -> None:
    if audit.checkpoint_every < timedelta(seconds=1):
        raise ConfigError("audit.checkpoint_every", "must be at least 1s")
    if audit.signing_key:
        try:
            load_private_key(audit.signing_key)
        except ValueError as exc:
            raise ConfigError("audit.signing_key", str(exc)) from None
    if retention.raw_after is not None and retention.raw_after < timedelta(hours=1):
        raise ConfigError("retention.raw_after", "must be at least 1h (a decided run still resumes from it)")


def check_redaction(redaction: RedactionSettings) -> None:
    for i, pattern in enumerate(redaction.patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"redaction.patterns[{i}]", f"not a valid regular expression: {exc}") from None


__all__ = [
    "AUDIT_KEYS",
    "REDACTION_KEYS",
    "RETENTION_KEYS",
    "AuditSettings",
    "RedactionSettings",
    "RetentionSettings",
    "check_audit",
    "check_redaction",
]
