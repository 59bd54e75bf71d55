"""Logging: one readable line per event, request ids, and no secret or token in any line."""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Iterable

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

# Signed tokens (base64url payload '.' base64url signature) and bearer credentials are masked
# whatever their source; channels add the shapes of their own tokens (ChannelSpec.secret_patterns).
_PATTERNS = (
    re.compile(r"\.?[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,}"),
    re.compile(r"(?i)(bearer\s+)[^\s\"',]+"),
)
_QUIET = ("httpx", "httpcore", "apscheduler", "asyncio")
# Every character that does not print (controls C0, DEL and C1, line and paragraph separators,
# bidirectional overrides and other format characters, surrogates, unassigned code points): from
# user input (a run id, a comment, a header) any of them could end a line, rewrite the terminal,
# reorder what an operator reads, or fail the encoding of the whole line.
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(ch: str) -> str:
    if ch.isprintable() or ch == " ":
        return ch
    code = ord(ch)
    return _NAMED.get(ch) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    )


def escape_controls(text: str) -> str:
    """`text` on one line, with every character that does not print written as an escape
    (backslashes doubled, so that an escape in the input cannot pass for one of ours)."""
    text = text.replace("\\", "\\\\")
    if text.isprintable():  # the common case, checked in C
        return text
    return "".join(map(_escaped, text))


class SecretFilter(logging.Filter):
    """Masks configured secrets and anything shaped like a token in every record."""

    def __init__(self, secrets: Iterable[str] = (), patterns: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True)
        self.patterns = (*_PATTERNS, *(re.compile(p) for p in patterns))

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "[REDACTED]")
        for pattern in self.patterns:
            text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "[REDACTED]", text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        # One event, one line: a newline from user input (run_id, a comment...) cannot forge another,
        # nor can any other control character; a traceback is kept on the same line too.
        record.msg, record.args = escape_controls(self.redact(message)), None
        if record.exc_text:
            record.exc_text = escape_controls(self.redact(record.exc_text))
        return True


def setup_logging(
    level: str = "INFO", secrets: Iterable[str] = (), patterns: Iterable[str] = (), quiet: Iterable[str] = ()
) -> SecretFilter:
    """`patterns`: more token shapes to mask; `quiet`: client libraries' loggers kept at WARNING."""
    redactor = SecretFilter(secrets, patterns)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-5s %(name)s [%(request_id)s] %(message)s"))
    handler.addFilter(redactor)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for noisy in (*_QUIET, *quiet):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    return redactor
