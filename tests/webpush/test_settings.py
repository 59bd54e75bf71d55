"""`[webpush]`: the key pair `hitl-gateway init` writes is a working one, the checks name the bad
key, and the private key is masked by check-config."""

from __future__ import annotations

import base64
import logging
import tomllib
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from gateway.cli.init import render
from gateway.config import Settings, effective_config
from gateway.core.errors import ConfigError
from gateway.core.tokens import TokenSigner
from gateway.delivery.webpush import PushingWebChannel
from gateway.settings.webpush import WebPushSettings, b64url, check_webpush, generate_keys, placeholder_subject, sample

GOOD = {"subject": "mailto:ops@example.com"}


def test_init_writes_a_key_pair_that_belongs_together() -> None:
    section = tomllib.loads(render())["webpush"]  # the extra is installed here: the section is on
    public, private = section["public_key"], section["private_key"]
    key = ec.derive_private_key(int.from_bytes(b64url(private), "big"), ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    assert base64.urlsafe_b64encode(point).decode().rstrip("=") == public
    check_webpush(WebPushSettings(public, private, section["subject"]))
    assert render() != render()  # fresh keys every time


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"public_key": "not-a-key"}, "webpush.public_key"),
        ({"private_key": "c2hvcnQ"}, "webpush.private_key"),
        ({"subject": "ops@example.com"}, "webpush.subject"),
        ({"subject": ""}, "webpush.subject"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(over: dict[str, str], key: str) -> None:
    public, private = generate_keys()
    values = {"public_key": public, "private_key": private, **GOOD, **over}
    with pytest.raises(ConfigError) as err:
        check_webpush(WebPushSettings(**values))
    assert err.value.key == key


def test_check_config_masks_the_private_key(settings_factory: Callable[..., Settings]) -> None:
    public, private = generate_keys()
    settings = settings_factory(webpush={"public_key": public, "private_key": private, **GOOD})
    shown: dict[str, Any] = effective_config(settings)["webpush"]
    assert shown["public_key"] == public and private not in str(shown)


def test_without_the_extra_init_writes_the_section_commented_out() -> None:
    text = sample(installed=False)
    assert "webpush" not in tomllib.loads(text) and "pip install ./sdk '.[webpush]'" in text
    lines = [line for line in text.splitlines() if "_key = " in line]
    assert len(lines) == 2 and all(line.startswith("# ") for line in lines)  # the keys are there to uncomment


@pytest.mark.parametrize(
    ("subject", "nobody"),
    [
        ("mailto:admin@example.com", True),  # what `init` writes
        ("mailto:ops@EXAMPLE.org", True),
        ("mailto:me@mail.example.net", True),
        ("mailto:root@localhost", True),
        ("https://push.test/contact", True),
        ("https://contact.invalid", True),
        ("mailto:ops@acme.com", False),
        ("https://acme.com/contact", False),
        ("mailto:ops@notexample.com", False),
    ],
)
def test_a_placeholder_push_subject_is_told_apart(subject: str, nobody: bool) -> None:
    assert placeholder_subject(subject) is nobody


def test_a_gateway_started_with_the_placeholder_push_subject_says_so(
    settings_factory: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    """`init` writes `mailto:admin@example.com`: pushes work, but a push service that must reach
    the operator (a key abused, pushes refused) writes to no one. The operator is told at start."""
    public, private = generate_keys()
    for subject, told in (("mailto:admin@example.com", True), ("mailto:ops@acme.com", False)):
        caplog.clear()
        settings = settings_factory(webpush={"public_key": public, "private_key": private, "subject": subject})
        PushingWebChannel(settings.webpush, "http://gw", TokenSigner(["k" * 32]), None)  # type: ignore[arg-type]
        warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert bool(warned) is told and all("set your own mailto: address or https: URL" in w for w in warned)
