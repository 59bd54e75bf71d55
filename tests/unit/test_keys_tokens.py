from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.errors import InvalidToken, TokenExpired
from gateway.core.keys import canonical_json, idempotency_key
from gateway.core.tokens import RESUME, TokenSigner

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def test_canonical_json_ignores_key_order_and_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == canonical_json({"a": [1, {"c": 3, "d": 2}], "b": 1})
    assert canonical_json({"x": "é"}) == '{"x":"é"}'


def test_idempotency_key_is_sha256_of_run_step_args() -> None:
    key = idempotency_key("run-1", "charge", {"b": 2, "a": 1})
    assert key == hashlib.sha256(b'run-1:charge:{"a":1,"b":2}').hexdigest()
    assert key == idempotency_key("run-1", "charge", {"a": 1, "b": 2})
    assert key != idempotency_key("run-1", "charge", {"a": 1, "b": 3})
    assert key != idempotency_key("run-2", "charge", {"a": 1, "b": 2})


def test_token_roundtrip_and_expiry() -> None:
    signer = TokenSigner(["k" * 32])
    token = signer.sign(RESUME, {"a": "x"}, NOW + timedelta(hours=1))
    assert signer.verify(RESUME, token, NOW)["a"] == "x"
    with pytest.raises(TokenExpired):
        signer.verify(RESUME, token, NOW + timedelta(hours=1))


def test_token_tampering_and_wrong_purpose_are_invalid() -> None:
    signer = TokenSigner(["k" * 32])
    token = signer.sign(RESUME, {"a": "x"}, NOW + timedelta(hours=1))
    payload, sig = token.split(".")
    for bad in (payload + "." + sig[:-2] + "AA", payload[:-1] + "." + sig, "garbage", ""):
        with pytest.raises(InvalidToken):
            signer.verify(RESUME, bad, NOW)
    with pytest.raises(InvalidToken):
        signer.verify("other.purpose", token, NOW)


def test_key_rotation_newest_signs_all_verify() -> None:
    old, new = "o" * 32, "n" * 32
    token_old = TokenSigner([old]).sign(RESUME, {"a": 1}, NOW + timedelta(hours=1))
    rotated = TokenSigner([old, new])
    assert rotated.verify(RESUME, token_old, NOW)["a"] == 1
    token_new = rotated.sign(RESUME, {"a": 1}, NOW + timedelta(hours=1))
    assert TokenSigner([new]).verify(RESUME, token_new, NOW)["a"] == 1
    with pytest.raises(InvalidToken):
        TokenSigner([new]).verify(RESUME, token_old, NOW)


def test_short_mac_checks_every_key() -> None:
    old, new = "o" * 32, "n" * 32
    mac = TokenSigner([old]).mac("cb", "abc")
    assert len(mac) == 10
    assert TokenSigner([old, new]).check_mac("cb", "abc", mac)
    assert not TokenSigner([new]).check_mac("cb", "abc", mac)
    assert not TokenSigner([old]).check_mac("cb", "abd", mac)
    assert not TokenSigner([old]).check_mac("cb", "abc", "")


def test_tokens_are_byte_identical_to_plain_itsdangerous() -> None:
    """The cached signer is an optimisation only: issued tokens must not change."""
    from itsdangerous import URLSafeSerializer

    for keys in (["k" * 32], ["old" * 11, "new" * 11]):
        plain = URLSafeSerializer(keys, salt=RESUME, signer_kwargs={"digest_method": hashlib.sha256})
        signer = TokenSigner(keys)
        for n in range(3):  # the second and third calls use the cached signer and derived key
            payload = {"a": f"id{n}", "r": "run", "h": "0123456789abcdef"}
            token = signer.sign(RESUME, payload, NOW + timedelta(hours=1))
            assert token == plain.dumps({**payload, "e": int((NOW + timedelta(hours=1)).timestamp())})
            assert signer.verify(RESUME, token, NOW)["a"] == f"id{n}"
    old_token = TokenSigner(["old" * 11]).sign(RESUME, {"a": 1}, NOW + timedelta(hours=1))
    assert TokenSigner(["old" * 11, "new" * 11]).verify(RESUME, old_token, NOW)["a"] == 1
