"""Pure classification of SMTP failures into the outbox's DeliveryError.

A 4xx reply is transient (the server says: try later), retried by the outbox with backoff; a 5xx
reply is terminal (`delivery_failed`: the address does not exist, the sender is refused...).
Both are answers, so the mail certainly was not accepted (`unsent`). A connection that never
opened is transient and unsent; one lost mid-conversation is transient too: sent again, the
mail keeps its Message-ID (render.message_id), so it cannot arrive as a second, unrelated mail.
"""

from __future__ import annotations

import aiosmtplib

from gateway.plugin import DeliveryError


def _code(exc: aiosmtplib.SMTPException) -> int | None:
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused) and exc.recipients:
        return exc.recipients[0].code
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return exc.code
    return None


def delivery_error(exc: aiosmtplib.SMTPException) -> DeliveryError:
    code = _code(exc)
    what = f"smtp: {code} {exc}" if code is not None else f"smtp: {type(exc).__name__}: {exc}"
    if code is not None:
        return DeliveryError(what[:300], transient=400 <= code < 500, unsent=True)
    if isinstance(exc, aiosmtplib.SMTPNotSupported):  # e.g. no STARTTLS: a setting, not a moment
        return DeliveryError(what[:300], transient=False, unsent=True)
    if isinstance(exc, aiosmtplib.SMTPConnectError):
        return DeliveryError(what[:300], transient=True, unsent=True)
    return DeliveryError(what[:300], transient=True)  # disconnected or timed out mid-conversation
