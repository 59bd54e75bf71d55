"""Canonical identities (pure), and the [people] and channel sections that use them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.config import Settings, load_settings
from gateway.core.errors import ConfigError, ValidationError
from gateway.core.identity import BUILT_IN, Identities
from gateway.delivery.registry import installed
from gateway.testing import TEST_SECRET

KINDS = {**BUILT_IN, **{kind: spec.identity for kind, spec in installed().items()}}
IDS = Identities(KINDS)


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("web:Alice", "web:alice"),
        ("operator:Ops-1", "operator:ops-1"),
        ("telegram:0111", "telegram:111"),
        ("slack:ualice", "slack:UALICE"),
        ("email:Alice@Example.ORG", "email:alice@example.org"),
    ],
)
def test_each_kind_has_one_spelling(raw: str, canonical: str) -> None:
    assert IDS.canonical(raw, "by") == canonical


@pytest.mark.parametrize(
    "raw",
    [
        "alice",
        "Web:alice",
        "web: alice",
        "web:alice ",
        "web:",
        ":alice",
        "web:al ice",
        "web:\u0430lice",
        "telegram:-1",
        "telegram:+1",
        "telegram:١",
        "slack:C123",
        "email:alice",
        "email:a@b",
        "api:ops",
        42,
        None,
    ],
)
def test_anything_else_is_refused_naming_the_field(raw: object) -> None:
    with pytest.raises(ValidationError) as err:
        IDS.canonical(raw, "requested_by")
    assert err.value.field == "requested_by" and "\n" not in err.value.message


@given(st.text(max_size=40))
def test_canonical_is_idempotent_and_never_crashes(text: str) -> None:
    for kind in KINDS:
        try:
            once = IDS.canonical(f"{kind}:{text}", "by")
        except ValidationError:
            continue
        assert IDS.canonical(once, "by") == once and once.isascii() and not any(c.isspace() for c in once)


def test_people_are_parties_and_an_identity_belongs_to_one_person() -> None:
    people = Identities(KINDS, {"alice": ["web:Alice", "telegram:111"], "bob": ["slack:UBOB"]})
    assert people.people == {"alice": ("web:alice", "telegram:111"), "bob": ("slack:UBOB",)}
    assert people.party("telegram:111") == people.party("web:alice") == "alice"
    assert people.party("web:carol") == "web:carol" and people.person("web:carol") is None
    with pytest.raises(ValidationError, match=r"already one of people\.alice"):
        Identities(KINDS, {"alice": ["web:alice"], "al": ["web:ALICE"]})


def _load(text: str, tmp_path: Path, env: dict[str, str] | None = None) -> Settings:
    path = tmp_path / "c.toml"
    path.write_text(f'[security]\nsecret_keys = ["{TEST_SECRET}"]\n' + text)
    return load_settings(path, env=env or {})


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[people.alice]\nweb = "alice"\nfax = "1"\n', "people.alice.fax"),
        ('[people.alice]\ntelegram = "x1"\n', "people.alice.telegram"),
        ('[people.alice]\nweb = "alice"\n[people.bob]\nweb = "Alice"\n', "people.bob"),
        ('[slack]\napprovers = ["C0NOTAMEMBER"]\n', "slack.approvers[0]"),
        ('[email]\nhost = "smtp.example.org"\n', "email.from"),
        ('[email]\nhost = "h"\nfrom = "a@b.org"\ntls = true\n', "email.tls"),
        ('[email]\nhost = "h"\nfrom = "a@b.org"\nusername = "u"\n', "email.password"),
        ('[email]\napprovers = ["not an address"]\n', "email.approvers[0]"),
        ('[web]\napprovers = ["alice"]\nviewers = ["Alice"]\n', "web.viewers[0]"),
    ],
)
def test_bad_identities_in_the_config_name_the_key(text: str, key: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _load(text, tmp_path)
    assert err.value.key == key


def test_people_from_the_environment(tmp_path: Path) -> None:
    settings = _load("", tmp_path, {"HITL_PEOPLE_ALICE_TELEGRAM": "111", "HITL_PEOPLE_ALICE_WEB": "Alice"})
    assert settings.people == {"alice": ("telegram:111", "web:alice")}
