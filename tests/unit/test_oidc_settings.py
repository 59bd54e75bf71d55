"""`[web.oidc]`: every key checked at start, the secret masked by check-config, the groups claim
mapped to groups that exist, and the ID token's identity chosen (verified e-mail, else sub)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import load_settings
from gateway.core.errors import ConfigError
from gateway.http.web.oidc import SignInRefused, identity_name
from gateway.settings.effective import effective_config
from gateway.testing import make_settings

OIDC = {"issuer": "https://login.example.com", "client_id": "gw", "client_secret": "s3cret"}


def _settings(oidc: Any, **more: Any) -> Any:
    return make_settings("sqlite:///:memory:", {"web": {"oidc": oidc}, **more})


@pytest.mark.parametrize(
    ("oidc", "key"),
    [
        ({**OIDC, "client_secret": ""}, "web.oidc.client_secret"),
        ({"issuer": OIDC["issuer"], "client_id": "gw"}, "web.oidc.client_secret"),
        ({**OIDC, "issuer": "login.example.com"}, "web.oidc.issuer"),
        ({**OIDC, "identity_claim": "name"}, "web.oidc.identity_claim"),
        ({**OIDC, "scopes": ["email"]}, "web.oidc.scopes"),
        ({**OIDC, "tenant": "x"}, "web.oidc.tenant"),
        ("not a table", "web.oidc"),
    ],
)
def test_a_bad_oidc_table_stops_the_start(oidc: Any, key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        _settings(oidc)
    assert exc.value.key == key


def test_the_environment_gives_an_inline_table_and_check_config_masks_the_secret() -> None:
    env = {"HITL_WEB_OIDC": '{issuer = "https://login.example.com", client_id = "gw", client_secret = "s3cret"}'}
    defaults = {"security": {"secret_keys": ["k" * 32], "api_keys": ["a" * 32]}, "store": {"url": "sqlite:///:memory:"}}
    settings = load_settings(None, env=env, defaults=defaults)
    assert settings.web.oidc is not None and settings.web.oidc.client_secret == "s3cret"
    shown = effective_config(settings)["web"]["oidc"]
    assert shown["client_secret"] == "***(6 chars)" and "s3cret" not in str(effective_config(settings))


def test_the_groups_claim_maps_to_groups_that_exist() -> None:
    mapped = _settings({**OIDC, "group_map": {"fin-team": "finance", "ops": "oncall"}})
    oidc, known = mapped.web.oidc, mapped.identities.groups
    assert set(known) == {"finance", "oncall"}  # a group_map target exists though no table lists it
    assert oidc.groups(["fin-team", "finance", 3, "other"], known) == {"finance"}
    assert oidc.groups("ops", known) == {"oncall"}
    plain = _settings(OIDC, groups={"finance": {"members": []}})
    assert plain.web.oidc.groups(["finance", "unknown"], plain.identities.groups) == {"finance"}
    assert plain.web.oidc.groups({"finance": True}, plain.identities.groups) == frozenset()
    assert plain.identities.claimable == {"finance"}


@pytest.mark.parametrize(
    ("claims", "how", "name"),
    [
        ({"sub": "u1", "email": "Alice@Example.com", "email_verified": True}, "email", "alice@example.com"),
        ({"sub": "u1", "email": "alice@example.com", "email_verified": False}, "email", "u1"),
        ({"sub": "u1", "email": "alice@example.com", "email_verified": "true"}, "email", "u1"),
        ({"sub": "u1", "email": "alice@example.com", "email_verified": True}, "sub", "u1"),
    ],
)
def test_the_identity_is_the_verified_email_else_sub(claims: dict[str, Any], how: str, name: str) -> None:
    assert identity_name(claims, how) == name


def test_an_identity_that_is_no_web_name_is_refused() -> None:
    with pytest.raises(SignInRefused):
        identity_name({"sub": "auth0|abc def"}, "email")


def test_oidc_without_group_map_warns_at_start(caplog: pytest.LogCaptureFixture) -> None:
    from gateway.http.web.oidc import OidcClient

    settings = _settings(OIDC).web.oidc
    with caplog.at_level("WARNING", logger="gateway.web"):
        OidcClient(settings, "https://gw.example.com")
    assert "no group_map" in caplog.text
    caplog.clear()
    mapped = _settings({**OIDC, "group_map": {"00gfin": "finance"}}, groups={"finance": {}}).web.oidc
    with caplog.at_level("WARNING", logger="gateway.web"):
        OidcClient(mapped, "https://gw.example.com")
    assert "group_map" not in caplog.text
