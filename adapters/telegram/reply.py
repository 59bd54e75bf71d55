"""The webhook's reply: one Bot API call that rides in the body of its 200 instead of a request.

Telegram runs a method given in the answer to a webhook delivery ("Making requests when getting
updates": JSON with the method's name in `method` and its parameters), one per answer, and the bot
never learns whether it worked. A press's answerCallbackQuery goes there: the reply is sent the
moment the press is handled, as the separate call was, and the full cycle makes one outbound
request fewer. Any other call (the reason question, an edit link) still goes to the Bot API: the
handler needs its result, or it is the second call of the update. Polling has no answer to carry
a call, so there the channel answers by request, as before.
"""

from __future__ import annotations

from typing import Any


class WebhookReply:
    """What one webhook delivery answers Telegram with: `{"ok": true}`, or the first answer to
    the update's press, as the method for Telegram to run."""

    __slots__ = ("method",)

    def __init__(self) -> None:
        self.method: dict[str, Any] | None = None

    def answer(self, query_id: str, text: str, alert: bool) -> bool:
        """Carry this answer, unless one is carried already (one method per reply): False then,
        and the caller makes the call itself."""
        if self.method is not None:
            return False
        self.method = {
            "method": "answerCallbackQuery",
            "callback_query_id": query_id,
            "text": text,
            "show_alert": alert,
        }
        return True

    def body(self) -> dict[str, Any]:
        return self.method if self.method is not None else {"ok": True}
