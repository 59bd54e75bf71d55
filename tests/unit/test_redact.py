"""PII redaction (pure) and sealing at rest."""

from __future__ import annotations

import pytest

from gateway.core.redact import Redactor, iban_ok, luhn_ok
from gateway.core.sealing import Sealer, SealError

R = Redactor.build()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail alice.smith+x@example.co.uk now", "mail [redacted:email] now"),
        ("card 4111 1111 1111 1111 ok", "card [redacted:card] ok"),
        ("card 4111-1111-1111-1111", "card [redacted:card]"),
        ("call +1 (415) 555-0132 today", "call [redacted:phone] today"),
        ("iban DE89 3704 0044 0532 0130 00 x", "iban [redacted:iban] x"),
        ("iban GB82WEST12345698765432", "iban [redacted:iban]"),
        ("Authorization: Bearer abc.DEF-123_xyz", "Authorization: Bearer [redacted:token]"),
    ],
)
def test_defaults_redact(text: str, expected: str) -> None:
    assert R.text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "amount 4200 EUR on 2026-11-30",
        "order 4111 1111 1111 1112",  # fails the Luhn check: not a card
        "invoice INV-2026-0001",
        "version 1.2.3",
    ],
)
def test_defaults_leave_ordinary_text_alone(text: str) -> None:
    assert R.text(text) == text


def test_checks() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89370400440532013000") and not iban_ok("DE89370400440532013001")


def test_values_custom_patterns_and_defaults_off() -> None:
    r = Redactor.build(defaults=False, patterns=[r"ACME-\d+"])
    value = {"ids": ["ACME-12", "x"], "n": 3, "mail": "a@b.io", "nested": {"k": "ACME-9"}}
    assert r.value(value) == {"ids": ["[redacted]", "x"], "n": 3, "mail": "a@b.io", "nested": {"k": "[redacted]"}}
    assert R.value({"to": "a@b.io", "amount": 42}) == {"to": "[redacted:email]", "amount": 42}


def test_sealer_round_trip_rotation_and_tamper() -> None:
    old = Sealer(["old-secret-0123456789"])
    sealed = old.seal({"args": {"card": "4111111111111111"}, "state": [1, 2]})
    assert "4111111111111111" not in sealed  # not "4111" alone: base64 may hold it
    rotated = Sealer(["old-secret-0123456789", "new-secret-0123456789"])
    assert rotated.open(sealed) == {"args": {"card": "4111111111111111"}, "state": [1, 2]}
    with pytest.raises(SealError):
        Sealer(["new-secret-0123456789"]).open(sealed)
    with pytest.raises(SealError):
        old.open(sealed[:-4] + "AAAA")
