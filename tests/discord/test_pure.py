"""The pure parts of the Discord channel: signature checks (against RFC 8032's test vector),
reading interactions and signed references, drawing cards within Discord's limits, classifying
failures, and masking bot tokens in logs."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from adapters.discord import errors, render
from adapters.discord.parse import (
    ButtonPress,
    CardVerb,
    ModalSubmit,
    NotOurs,
    Ping,
    UnreadableInteraction,
    make_ref,
    parse,
)
from adapters.discord.spec import SPEC
from adapters.discord.verify import is_valid, public_key, sign
from gateway.core.tokens import TokenSigner
from gateway.telemetry.logs import SecretFilter
from tests.fakes.discord_api import BOT_TOKEN
from tests.fakes.discord_limits import message_error

# RFC 8032, section 7.1, TEST 1: the empty message
RFC_SECRET = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
RFC_SIGNATURE = (
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065"
    "224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)
SIGNER = TokenSigner(["pure-test-secret-0123456789abcdef"])
NOW = 1_893_499_200


def test_signatures_are_ed25519_as_rfc_8032_gives_them() -> None:
    private = Ed25519PrivateKey.from_private_bytes(RFC_SECRET)
    assert sign(private, "", b"") == RFC_SIGNATURE
    key = public_key(RFC_PUBLIC)
    ts, body = str(NOW), b'{"type":1}'
    good = sign(private, ts, body)
    assert is_valid(key, body, ts, good, NOW)
    assert not is_valid(key, body + b" ", ts, good, NOW)
    assert not is_valid(key, body, str(NOW + 1), good, NOW + 1)  # the timestamp is signed too
    assert not is_valid(key, body, ts, good, NOW + 301) and is_valid(key, body, ts, good, NOW + 300)
    assert not is_valid(key, body, ts, good.upper()[:-2] + "zz", NOW)
    assert not is_valid(key, body, "-1", good, NOW) and not is_valid(key, body, " 1", good, NOW)
    assert not is_valid(None, body, ts, good, NOW)
    assert public_key("00" * 31) is None and public_key("xyz") is None


def _interaction(kind: int, custom_id: str, **more: object) -> bytes:
    data = {
        "id": "1",
        "type": kind,
        "token": "tok",
        "guild_id": "1200000000000000001",
        "channel_id": "1300000000000000777",
        "member": {"user": {"id": "1110000000000000001", "username": "alice", "global_name": "Alice"}},
        "message": {"id": "1300000000000000001"},
        "data": {"custom_id": custom_id, **more},
    }
    return json.dumps(data).encode()


def test_interactions_are_read_with_their_signed_reference() -> None:
    ref = make_ref(SIGNER, "abc")
    assert parse(b'{"id": "9", "type": 1}', SIGNER) == Ping("9")
    press = parse(_interaction(3, f"hitl:approve.tag0123456:{ref}"), SIGNER)
    assert isinstance(press, ButtonPress)
    assert (press.verb, press.approval_id, press.arg) == (CardVerb.APPROVE, "abc", "tag0123456")
    assert (press.origin.user_id, press.origin.guild_id, press.origin.name) == (
        "1110000000000000001",
        "1200000000000000001",
        "Alice",
    )
    rows = [{"type": 1, "components": [{"type": 4, "custom_id": "reason", "value": "no"}]}]
    submit = parse(_interaction(5, f"hitl:reason:{ref}", components=rows), SIGNER)
    assert isinstance(submit, ModalSubmit) and submit.values == {"reason": "no"}
    assert isinstance(parse(_interaction(3, "another-bot:button"), SIGNER), NotOurs)
    assert isinstance(parse(b'{"id": "9", "type": 2}', SIGNER), NotOurs)  # a slash command: not ours


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1]",
        b"[" * 200 + b"]" * 200,
        _interaction(3, "hitl:approve:abc.0000"),
        _interaction(3, "hitl:approve:" + make_ref(TokenSigner(["another-secret-0123456789abcdef"]), "abc")),
        _interaction(3, "hitl:unknown:" + make_ref(SIGNER, "abc")),
        _interaction(3, "hitl:extend:" + make_ref(SIGNER, "abc")),  # extend names no duration
        _interaction(5, "hitl:approve:" + make_ref(SIGNER, "abc")),  # not a modal of ours
    ],
)
def test_what_cannot_be_read_or_is_forged_is_refused(body: bytes) -> None:
    with pytest.raises(UnreadableInteraction):
        parse(body, SIGNER)


def test_every_button_fits_discords_limits() -> None:
    ref = make_ref(SIGNER, "a" * 16)
    tag = "0123456789"
    long = [
        render.button(v, "x" * 200, ref, render.SUCCESS) for v in (f"approve.{tag}", f"grant.run.{tag}", "extend.12h")
    ]
    assert all(len(b["custom_id"]) <= 100 and not b["custom_id"].endswith("…") for b in long)
    assert all(len(b["label"]) <= 80 for b in long)
    rows = render.rows([render.button(f"v{i}", "B", ref, 1) for i in range(40)])
    assert len(rows) == 5 and all(len(r["components"]) == 5 for r in rows)
    assert message_error({"content": "x", "components": rows}) is None


def test_user_text_is_escaped_and_pings_nobody() -> None:
    assert render.escape("@everyone <@1> **b** `c` # h") == "\\@everyone \\<\\@1\\> \\*\\*b\\*\\* \\`c\\` \\# h"
    for limit in range(2, 20):  # cut, never leaving half an escape before the ellipsis
        out = render.fit("*" * 50, limit)
        body = out[:-1]
        assert len(out) <= limit and (len(body) - len(body.rstrip("\\"))) % 2 == 0


def test_failures_are_classified_for_the_outbox() -> None:
    limited = errors.classify("POST channels", 429, {"retry_after": 2.5, "global": False}, "3")
    assert limited.transient and limited.retry_after == 2.5 and limited.unsent
    assert errors.classify("POST channels", 429, None, "3").retry_after == 3.0
    assert errors.classify("POST channels", 502, None).transient
    missing = errors.classify("POST channels", 403, {"code": 50013, "message": "Missing Permissions"})
    assert not missing.transient and missing.code == 50013 and "Missing Permissions" in str(missing)


def test_bot_tokens_are_masked_in_logs() -> None:
    line = SecretFilter(patterns=SPEC.secret_patterns).redact(f"Authorization: Bot {BOT_TOKEN}")
    assert BOT_TOKEN not in line and "[REDACTED]" in line
    assert SPEC.identity.canonical("1110000000000000001") == "1110000000000000001"
    assert SPEC.identity.canonical("U0123") is None
    with pytest.raises(ValueError):
        SPEC.target("general")
