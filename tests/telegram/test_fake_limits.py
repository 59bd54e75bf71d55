"""The fake Bot API refuses what Telegram refuses (4096 characters after entity parsing, invalid
HTML), so a renderer regression fails here; and the worst cards we render pass it for real."""

from __future__ import annotations

from dataclasses import replace

import pytest

from adapters.telegram.channel import TelegramChannel
from gateway.core.channels import OutgoingCard
from gateway.core.models import Decision, Outcome, Source, Status
from tests.fakes.telegram_html import text_error
from tests.telegram.conftest import CHAT, TG
from tests.telegram.test_render import NOW, approval

TOO_LONG = "Bad Request: message is too long"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("x" * 4096, None),
        ("x" * 4097, TOO_LONG),
        ("&amp;" * 4096, None),  # 20,480 characters of source, 4096 once parsed
        ("<b>" + "x" * 4096 + "</b>", None),
        ("&lt;" * 4097, TOO_LONG),
        ("<b>open", "can't parse entities: Can't find end tag"),
        ("<b><i>x</b></i>", "can't parse entities: Unmatched end tag"),
        ("<div>x</div>", 'can\'t parse entities: Unsupported start tag "div"'),
        ("1 < 2", "can't parse entities: Unexpected character '<'"),
        ("fish & chips", "can't parse entities: Character '&' is reserved"),
        ("&nbsp;", "can't parse entities: Character '&' is reserved"),
        ("<b>  </b>", "Bad Request: message text is empty"),
        ('<a href="https://x">a</a> <pre>&lt;x&gt;</pre> <code>&#60;</code>', None),
    ],
)
def test_the_fake_parses_html_like_telegram(text: str, error: str | None) -> None:
    got = text_error(text, "HTML")
    assert got == error if error is None else (got is not None and error in got)


def test_without_a_parse_mode_the_text_is_taken_as_it_is() -> None:
    assert text_error("1 < 2 & <b>", None) is None
    assert text_error("x" * 4097, None) == TOO_LONG


def _channel(tg: TG) -> TelegramChannel:
    channel = tg.rt.channels["telegram"]
    assert isinstance(channel, TelegramChannel)
    return channel


async def test_the_worst_cards_we_render_are_accepted_by_the_fake(tg: TG) -> None:
    d = Decision(Outcome.APPROVE, "web:" + "&" * 200, NOW, Source.HUMAN, comment="<" * 2000)
    args = {"&" * 20 + str(i): "<" * 50 for i in range(40)}
    absurd = approval(title="&" * 300, summary="S&" * 5000, run_id="&" * 200, step="<" * 200, args=args)
    channel, address = _channel(tg), f"telegram:{CHAT}"
    ref = await channel.post_card(OutgoingCard(address, str(CHAT), absurd, NOW), [])
    decided = replace(absurd, status=Status.APPROVED, decision=d)
    await channel.update_card(OutgoingCard(address, str(CHAT), decided, NOW, ref))
    assert [c.method for c in tg.api.calls if c.method != "getMe"] == ["sendMessage", "editMessageText"]
