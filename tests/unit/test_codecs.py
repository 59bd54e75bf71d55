"""The hot-path codecs are exact stand-ins for the slower calls they replaced (the timeout storm
decodes, evolves and encodes every approval): same values, same bytes, same errors."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core import policy as rules
from gateway.core.keys import canonical_json
from gateway.core.models import Approval, Outcome, Policy, Status, Vote
from gateway.store.rows import APPROVAL_COLUMNS, _loads, approval_from_row, approval_from_values, approval_values
from gateway.testing import make_approval

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)
POLICY = Policy(name="p", timeout=timedelta(minutes=5), remind=(timedelta(minutes=1),))


def _approvals() -> list[Approval]:
    waiting = make_approval(POLICY, NOW, 1, approvers=("ann", "bob"), worker="agent", sealed="gAAAA-sealed")
    voted = rules.apply_vote(waiting, Vote("ann", Outcome.APPROVE, NOW, comment="ok", channel="web")).approval
    timed_out = rules.time_out(waiting, NOW + timedelta(minutes=5)).approval
    bare = make_approval(Policy(timeout=None), NOW, 2, state=None, requested_by="agent-7")
    return [waiting, voted, timed_out, bare]


def test_evolve_is_dataclasses_replace() -> None:
    for a in _approvals():
        changes = {"status": Status.CANCELLED, "wake_at": None, "version": a.version + 1, "title": "t"}
        assert a.evolve(**changes) == dataclasses.replace(a, **changes)
        assert a.evolve() == a and a.evolve() is not a


def test_evolve_rejects_unknown_fields_and_naive_datetimes() -> None:
    a = _approvals()[0]
    with pytest.raises(TypeError, match="nope"):
        a.evolve(nope=1)
    with pytest.raises(ValueError, match="deadline must be timezone-aware"):
        a.evolve(deadline=datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="created_at must be timezone-aware"):
        a.evolve(created_at=datetime(2030, 1, 1))


def test_rows_decode_by_position_and_by_name_to_the_same_approval() -> None:
    for a in _approvals():
        values = approval_values(a)
        assert approval_from_values(values) == a
        assert approval_from_row(dict(zip(APPROVAL_COLUMNS, values, strict=True))) == a


@pytest.mark.parametrize("text", ['{"a":1,"b":[1,2.5,null]}', "[]", "null", '"s"', ' {"a": 1} ', "{}\n", "1e3"])
def test_column_loads_is_json_loads(text: str) -> None:
    assert _loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", "{", '{"a":1} x', "nan?"])
def test_column_loads_fails_like_json_loads(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        _loads(text)
    assert str(got.value) == str(expected.value)


def test_canonical_json_errors_are_those_of_json_dumps() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="Circular reference detected"):
        canonical_json({"x": cyclic})
    with pytest.raises(ValueError, match="Out of range float"):
        canonical_json({"x": float("nan")})
    with pytest.raises(TypeError, match="not JSON serializable"):
        canonical_json({"x": object()})
    assert canonical_json("é") == json.dumps("é", ensure_ascii=False)
