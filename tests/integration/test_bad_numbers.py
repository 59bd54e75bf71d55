"""Found by the property tests: huge durations and NaN/Infinity were 500s, now clear 400s."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.durations import parse_duration
from gateway.http.keys import RUNTIME
from tests.conftest import AUTH, suspend_body
from tests.helpers import table_counts


@pytest.mark.parametrize("limit", ["99999999999d", 1e300, "1000000w", "36600d"])
async def test_a_huge_policy_timeout_is_a_400_naming_the_field(client: Any, limit: Any) -> None:
    rt = client.server.app[RUNTIME]
    before = await table_counts(rt)
    body = suspend_body(policy={"timeout": limit})
    resp = await client.post("/v1/suspend", json=body, headers=AUTH)
    assert resp.status == 400, await resp.text()
    error = (await resp.json())["error"]
    assert "timeout" in error["message"] and "100 years" in error["message"]
    assert await table_counts(rt) == before


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
async def test_nan_and_infinity_are_not_json(client: Any, constant: str) -> None:
    raw = f'{{"run_id": "r", "step": "s", "title": "t", "args": {{"x": {constant}}}}}'
    resp = await client.post("/v1/suspend", data=raw, headers={**AUTH, "Content-Type": "application/json"})
    assert resp.status == 400, await resp.text()
    assert (await resp.json())["error"]["code"] == "invalid_json"


def test_parse_duration_bounds() -> None:
    assert parse_duration("36500d").days == 36500
    for bad in (float("inf"), float("nan"), 10**12, "36600d"):
        with pytest.raises(ValueError, match="100 years"):
            parse_duration(bad)
