"""Pure classification of Discord API failures into the outbox's DeliveryError.

HTTP 429 waits exactly `retry_after` (the JSON body's, in seconds, else the `Retry-After`
header); 5xx is retried; everything else (10003 Unknown Channel, 50001 Missing Access, 50013
Missing Permissions, 50035 Invalid Form Body, 401) is terminal: the same request would fail the
same way, so it is recorded on the card and in the approval's events.
"""

from __future__ import annotations

from typing import Any

from gateway.plugin import DeliveryError

UNKNOWN_MESSAGE = 10008


def retry_after_seconds(body: Any, header: str | None) -> float | None:
    """How long Discord asks to wait, or None if it does not say (or says nonsense)."""
    value: Any = body.get("retry_after") if isinstance(body, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        try:
            value = float(header.strip()) if header is not None else None
        except ValueError:
            value = None
    return float(value) if value is not None and 0 <= value < 86400 else None


class DiscordCallError(DeliveryError):
    """A call Discord answered with an error: `code` is Discord's JSON error code, if any."""

    def __init__(
        self,
        message: str,
        code: int | None,
        *,
        transient: bool,
        retry_after: float | None = None,
        unsent: bool = True,
    ) -> None:
        # Refused (4xx, 429): Discord certainly did not act. A 5xx may come from in front of it.
        super().__init__(message, transient=transient, retry_after=retry_after, unsent=unsent)
        self.code = code


def classify(what: str, status: int, body: Any, retry_after: str | None = None) -> DiscordCallError:
    """Turn one failed call into a transient or terminal DeliveryError."""
    code = body.get("code") if isinstance(body, dict) and isinstance(body.get("code"), int) else None
    text = body.get("message") if isinstance(body, dict) and isinstance(body.get("message"), str) else ""
    message = f"discord {what}: HTTP {status}" + (f" {code}" if code else "") + (f" {text[:200]}" if text else "")
    if status == 429:
        return DiscordCallError(message, code, transient=True, retry_after=retry_after_seconds(body, retry_after))
    if status >= 500:
        return DiscordCallError(message, code, transient=True, unsent=False)
    return DiscordCallError(message, code, transient=False)


def network_error(what: str, exc: BaseException, *, connected: bool) -> DeliveryError:
    """Refused before connecting: certainly unsent. Reset or timed out after: nobody knows."""
    return DeliveryError(
        f"discord {what}: {type(exc).__name__}", transient=True, unsent=not connected, uncertain=connected
    )
