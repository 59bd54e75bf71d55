"""Pure classification of Slack Web API failures into the outbox's DeliveryError.

HTTP 429 (or `ok:false` `ratelimited`) waits exactly `Retry-After` seconds; 5xx and Slack's own
`internal_error`-like codes are retried; everything else (`channel_not_found`, `not_in_channel`,
`invalid_auth`, ...) is terminal: retrying the same request cannot help, so it is recorded
on the card and in the approval's events, visible through the API.
"""

from __future__ import annotations

# The card itself is refused (too many blocks, too much text, a block Slack will not take): the
# same card would fail the same way, so the channel posts a compact one instead (render.compact).
from gateway.plugin import DeliveryError

TOO_BIG = frozenset({"msg_blocks_too_long", "msg_too_long", "invalid_blocks"})
RATE_LIMITED = frozenset({"ratelimited", "rate_limited"})
TRANSIENT = frozenset({"internal_error", "fatal_error", "service_unavailable", "request_timeout"})
TERMINAL = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "missing_scope",
        "no_permission",
        "restricted_action",
        "team_access_not_granted",
        "invalid_blocks",
        "invalid_arguments",
        "msg_too_long",
        "msg_blocks_too_long",
        "message_not_found",
        "cant_update_message",
        "edit_window_closed",
    }
)


def retry_after_seconds(header: str | None) -> float | None:
    """`Retry-After` as seconds (Slack sends an integer), or None if absent or unreadable."""
    if header is None:
        return None
    try:
        value = float(header.strip())
    except ValueError:
        return None
    return value if 0 <= value < 86400 else None


class SlackCallError(DeliveryError):
    """A Web API call that Slack answered with an error: `code` is Slack's (e.g. `msg_too_long`)."""

    def __init__(self, message: str, code: str | None, *, transient: bool, retry_after: float | None = None) -> None:
        super().__init__(message, transient=transient, retry_after=retry_after)
        self.code = code

    @property
    def too_big(self) -> bool:
        return self.code in TOO_BIG


def classify(method: str, status: int, error: str | None, retry_after: str | None = None) -> SlackCallError:
    """Turn one failed call into a transient or terminal DeliveryError."""
    what = error or f"HTTP {status}"
    message = f"slack {method}: {what}"
    if status == 429 or error in RATE_LIMITED:
        return SlackCallError(message, error, transient=True, retry_after=retry_after_seconds(retry_after))
    if status >= 500 or error in TRANSIENT:
        return SlackCallError(message, error, transient=True)
    # TERMINAL lists the usual ones; an unknown code is terminal too: the same request would
    # fail the same way, and the error stays visible on the card instead of looping forever.
    return SlackCallError(message, error, transient=False)


def network_error(method: str, exc: BaseException) -> DeliveryError:
    """Connection refused, reset or timed out: retried with backoff."""
    return DeliveryError(f"slack {method}: {type(exc).__name__}", transient=True)
