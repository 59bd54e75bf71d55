"""Telegram's `parse_mode=HTML`, as strict as the Bot API: the text after entity parsing, or the
`can't parse entities` error Telegram answers.

Bot API "Formatting options": only these tags (b, strong, i, em, u, ins, s, strike, del, span
class="tg-spoiler", tg-spoiler, a href, tg-emoji, code, pre, blockquote), properly nested; every
`<` and `&` not part of a tag or an entity must be escaped; the named entities are &lt; &gt; &amp;
&quot; (and numeric ones). The 1-4096 character limit applies to the text after this parsing.
"""

from __future__ import annotations

import html
import re

MAX_TEXT = 4096
TAGS = frozenset(
    {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "tg-emoji", "code", "pre"}
    | {"blockquote"}
)
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});")
_NAME = re.compile(r"/?([a-zA-Z][a-zA-Z0-9-]*)")


class BadHtml(ValueError):
    """The `can't parse entities: ...` reason."""


def parse(text: str) -> str:
    """The message's text once Telegram has parsed its HTML; BadHtml if it would refuse it."""
    out: list[str] = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "<":
            end = text.find(">", i)
            match = _NAME.match(text, i + 1)
            if end < 0 or match is None:
                raise BadHtml(f"Unexpected character '<' at byte offset {i}")
            name = match.group(1).lower()
            if text[i + 1] == "/":
                if not stack or stack[-1] != name:
                    raise BadHtml(f'Unmatched end tag at byte offset {i}, expected "</{stack[-1] if stack else ""}>"')
                stack.pop()
            elif name not in TAGS:
                raise BadHtml(f'Unsupported start tag "{name}" at byte offset {i}')
            else:
                stack.append(name)
            i = end + 1
        elif ch == "&":
            entity = _ENTITY.match(text, i)
            if entity is None:
                raise BadHtml(f"Character '&' is reserved and must be escaped as &amp; (byte offset {i})")
            out.append(html.unescape(entity.group(0)))
            i = entity.end()
        else:
            out.append(ch)
            i += 1
    if stack:
        raise BadHtml(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)


def text_error(text: str, parse_mode: str | None) -> str | None:
    """The Bot API's 400 description for a message text, or None if Telegram takes it."""
    plain = text
    if (parse_mode or "").upper() == "HTML":
        try:
            plain = parse(text)
        except BadHtml as exc:
            return f"Bad Request: can't parse entities: {exc}"
    if not plain.strip():
        return "Bad Request: message text is empty"
    if len(plain) > MAX_TEXT:
        return "Bad Request: message is too long"
    return None
