"""Slow args_schema checks, against a real `hitl-gateway serve`: none runs far past its budget,
and none holds up another agent's check.

One re2 search is one C call, linear in the text but with a factor of the pattern's size
(`[\\s\\S]{1000}[\\s\\S]{1000}z` takes seconds on a few hundred kB), and nothing interrupts it.
So a huge pattern program is refused at suspend, a check's regex work (program size x text
length) is capped, the clock is looked at before every search, and a check that still runs
past its budget has its worker process killed. A check waits for a free worker at most the
budget.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest

from tests.security.conftest import BILLING, MAIL, Launch, call, suspend_body

pytestmark = pytest.mark.subprocess
HEAVY = r"[\s\S]{1000}[\s\S]{1000}z"  # about 14,000 re2 instructions
UNDER = r"[\s\S]{700}z"  # about 4,900: under the program limit, but costly on a long text
WITHIN = 8.0  # the budget is 2 s: an honest check, queued behind two slow ones, must be far under this


def _jam(n: int, pattern: str) -> dict[str, Any]:
    patterns = {pattern + "x" * k: {} for k in range(10)}  # about 20 kB of schema, under its 64 kB bound
    return suspend_body(
        f"jam-{n}",
        args={"a" * 400_000: 1},  # under the 1 MiB body bound
        args_schema={"type": "object", "patternProperties": patterns},
    )


@pytest.mark.parametrize(("pattern", "limit"), [(HEAVY, "MAX_PATTERN_PROGRAM"), (UNDER, "MAX_REGEX_WORK")])
async def test_slow_checks_answer_within_their_budget_and_block_no_other_agent(
    launch: Launch, pattern: str, limit: str
) -> None:
    gateway = launch()
    timeout = aiohttp.ClientTimeout(total=WITHIN + 4)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        jams = [
            asyncio.create_task(call(http, "POST", f"{gateway.url}/v1/suspend", json=_jam(n, pattern), headers=BILLING))
            for n in range(2)
        ]
        await asyncio.sleep(2)  # both workers busy, on the old code
        honest = suspend_body("honest", args={"amount": 5}, args_schema={"type": "object"})
        start = time.monotonic()
        try:
            status, body = await asyncio.wait_for(
                call(http, "POST", f"{gateway.url}/v1/suspend", json=honest, headers=MAIL), WITHIN
            )
        except TimeoutError:
            status, body = 0, "no answer"
        took = time.monotonic() - start
        results = await asyncio.gather(*jams, return_exceptions=True)
    assert status == 201 and took < WITHIN, f"another agent's suspend: {status} {body} after {took:.1f} s"
    for result in results:
        assert not isinstance(result, BaseException), f"a slow check did not answer: {result!r}"
        assert result[0] == 400 and limit in str(result[1]), result
