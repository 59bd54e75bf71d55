"""The policy keys of standing grants: parsed and bounded in the config (an error names the key),
kept with the approval's policy, and never the agent's to set."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gateway.core.errors import ConfigError
from gateway.core.grants import covered_hash
from gateway.core.models import Policy
from gateway.core.policy import parse_policy
from gateway.testing import make_settings


def test_grants_parse_and_round_trip_through_the_stored_policy() -> None:
    policy = parse_policy({"grants": ["60m", "run", "1h"], "grant_max": "8h", "grant_fields": ["customer"]}, name="p")
    assert (policy.grants, policy.grant_max, policy.grant_fields) == (("1h", "run"), timedelta(hours=8), ("customer",))
    assert Policy.from_json(policy.to_json()) == policy
    assert "grants" not in Policy().to_json()  # older policies are stored as before


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"grants": ["2d"], "grant_max": "8h"}, "policies.p.grants[0]"),
        ({"grants": ["25h"]}, "policies.p.grants[0]"),  # the default cap is 24h
        ({"grants": ["soon"]}, "policies.p.grants[0]"),
        ({"grant_max": "run"}, "policies.p.grant_max"),
        ({"grant_fields": []}, "policies.p.grant_fields"),
        ({"agent_may_set": ["grants"]}, "policies.p.agent_may_set[0]"),
    ],
)
def test_a_bad_grant_key_stops_the_start_naming_it(body: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_settings("sqlite:///:memory:", {"policies": {"p": body}})
    assert key in str(caught.value)


def test_the_covered_hash_tells_a_missing_field_from_a_null_one() -> None:
    assert covered_hash({"a": 1, "b": 2}, ("a",)) == covered_hash({"a": 1, "b": 3}, ("a",))
    assert covered_hash({}, ("a",)) != covered_hash({"a": None}, ("a",))
    assert covered_hash({"a": 1}, None) != covered_hash({"a": 1}, ("a",))
