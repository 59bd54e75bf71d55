"""Schema checks in worker processes (gateway.service.checks): the refusal is the same as in
process, and a worker that dies fails only its own check."""

from __future__ import annotations

import os

import pytest

from gateway.core import edits
from gateway.core.errors import ValidationError
from gateway.core.models import EditTerms
from gateway.service.checks import checked

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
