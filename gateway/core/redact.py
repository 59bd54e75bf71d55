"""PII redaction for everything people and logs see: cards, events, API views, job output tails.

The raw values stay intact for the worker: `gateway.core.sealing` encrypts them at rest and only a
resume-token holder gets them back (`Service.rehydration_document`).

Defaults (each can be turned off with `[redaction] defaults = false`): e-mail addresses, card
numbers that pass the Luhn check, phone numbers, IBANs (mod-97 checked) and bearer tokens. Extra
regular expressions come from `[redaction] patterns`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

Replace = Callable[[re.Match[str]], str]

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_PHONE = re.compile(r"(?<![\w+])\+?\(?\d[\d ().-]{6,18}\d(?![\w])")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of a string of digits (card numbers)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    """The ISO 13616 mod-97 check."""
    s = text.replace(" ", "")
    rearranged = s[4:] + s[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def _card(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group(0))
    return "[redacted:card]" if 13 <= len(digits) <= 19 and luhn_ok(digits) else m.group(0)


def _iban(m: re.Match[str]) -> str:
    return "[redacted:iban]" if iban_ok(m.group(0)) else m.group(0)


def _phone(m: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", m.group(0))
    return "[redacted:phone]" if 9 <= len(digits) <= 15 else m.group(0)


DEFAULT_RULES: tuple[tuple[re.Pattern[str], Replace], ...] = (
    (_BEARER, lambda m: m.group(1) + "[redacted:token]"),
    (_EMAIL, lambda m: "[redacted:email]"),
    (_IBAN, _iban),
    (_CARD, _card),
    (_PHONE, _phone),
)


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces PII in strings, and in every string inside JSON-like values."""

    rules: tuple[tuple[re.Pattern[str], Replace], ...] = DEFAULT_RULES

    @classmethod
    def build(cls, *, defaults: bool = True, patterns: Iterable[str] = ()) -> Redactor:
        extra = tuple((re.compile(p), _plain) for p in patterns)
        return cls((DEFAULT_RULES if defaults else ()) + extra)

    def text(self, value: str) -> str:
        for pattern, replace in self.rules:
            value = pattern.sub(replace, value)
        return value

    def value(self, value: Any) -> Any:
        """A redacted copy of a JSON-like value (strings inside dicts and lists; keys kept)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def _plain(m: re.Match[str]) -> str:
    return "[redacted]"


__all__ = ["DEFAULT_RULES", "Redactor", "iban_ok", "luhn_ok"]
