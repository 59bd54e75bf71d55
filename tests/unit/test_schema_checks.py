"""Schema checks in worker processes (gateway.service.checks): the refusal is the same as in
process, a worker that dies fails only its own check, a check past its budget is killed, and a
check waits for a free worker at most the budget."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from gateway.core import edits
from gateway.core.errors import ValidationError
from gateway.core.models import EditTerms
from gateway.core.schemas import CHECK_BUDGET
from gateway.service.checks import HOLD, checked

pytestmark = pytest.mark.subprocess  # every test here starts a process

SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 10}}}


async def test_a_check_in_a_worker_answers_like_one_in_process() -> None:
    terms = await checked(edits.terms_checked, SCHEMA, ["amount"], {"amount": 3})
    assert terms == EditTerms(SCHEMA, ("amount",))
    with pytest.raises(ValidationError) as exc:
        await checked(edits.terms_checked, SCHEMA, True, {"amount": 11})
    assert exc.value.field == "args.amount" and exc.value.message == "args.amount: 11 is greater than the maximum of 10"
    with pytest.raises(ValidationError) as exc:
        await checked(edits.terms_checked, {"$ref": "https://example.com/s.json"}, True, {})
    assert exc.value.field == "args_schema.$ref"


async def test_a_worker_that_dies_fails_only_its_own_check() -> None:
    with pytest.raises(ValidationError, match="worker process died") as exc:
        await checked(os._exit, 1)
    assert exc.value.field == "args_schema"
    assert await checked(edits.terms_checked, SCHEMA, None, {"amount": 1}) == EditTerms(SCHEMA, False)


async def test_a_check_past_its_budget_is_killed_and_a_queued_one_waits_at_most_the_hold() -> None:
    # what no schema can do any more: a call that ignores the clock (time.sleep, pickled by name)
    stuck = [asyncio.create_task(checked(time.sleep, 60)) for _ in range(2)]
    await asyncio.sleep(1)
    queued = time.monotonic()
    try:  # busy after HOLD, or run on the worker that replaced a killed one
        assert await checked(len, "ab") == 2
    except ValidationError as exc:
        assert "busy" in exc.message
    assert time.monotonic() - queued < HOLD + 3  # at most a new worker's start more
    for task in stuck:
        with pytest.raises(ValidationError, match=f"within {CHECK_BUDGET:g} s"):
            await task
    assert await checked(len, "abc") == 3  # new workers take the killed ones' places
