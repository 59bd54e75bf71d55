"""An approval's summary as safe Markdown: markdown-it-py with raw HTML off, then nh3.

Agents write their summaries in Markdown. The parser (CommonMark, tables, strikethrough) never
passes HTML through (`html: False` escapes it) and refuses `javascript:` links; the sanitizer
then keeps only the tags and attributes below, whatever the parser made: no image (a tracking
pixel, and the pages' CSP allows none from elsewhere), no style, no script, no event handler.
Links get `rel="noopener noreferrer nofollow"`. Nothing here needs a script or an inline style,
so the pages' strict Content-Security-Policy stays as it is.
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

_PARSER = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])
_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
_SCHEMES = {"http", "https", "mailto"}
MAX_CHARS = 20_000  # a summary longer than this is shown as its first MAX_CHARS characters


def markdown(text: str) -> Markup:
    """`text` (Markdown) as sanitized HTML, safe to put in a page unescaped."""
    html = _PARSER.render(text[:MAX_CHARS])
    clean = nh3.clean(
        html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_SCHEMES, link_rel="noopener noreferrer nofollow"
    )
    return Markup(clean)  # sanitized by nh3 just above


__all__ = ["MAX_CHARS", "markdown"]
