"""Identities are canonical, and a person is one party (issue 13, "identities are canonical").

Findings covered (each failed on main before the fix):
- "The requester check depends on spelling": any spelling of web user alice (or of her Telegram
  account) as `requested_by` ("Web:alice", "web:alice ", "web: alice", "WEB:ALICE", "alice",
  "telegram:0111"...) is refused with a 400 naming the field, or canonicalised so that she still
  cannot approve her own request; and with `[people.alice]` the check covers all of her
  identities (asked as web:alice, she cannot approve from Telegram either).
- "One person counts twice": Telegram user 111 and web user alice are one person, and together
  they do not meet a quorum of 2.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.core.models import Outcome
from gateway.http.web.auth import hash_password
from tests.security.channel_support import (
    CHAT,
    PASSWORD,
    Config,
    Stack,
    stack_of,
    telegram_section,
    web_section,
)

pytestmark = pytest.mark.subprocess
ALICE_TG, BOB_TG = 111, 222

# Spellings that all mean web user alice (or her Telegram account 111), never somebody else.
_KINDS = st.sampled_from(["web", "Web", "WEB", "wEb", " web", "web ", "\tweb"])
_SEPS = st.sampled_from([":", ": ", " :", "：", "::"])
_NAMES = st.sampled_from(["alice", "ALICE", "Alice", "alice ", " alice", "alice\n", "alice\u200b", "\u0430lice"])
_TG_KINDS = st.sampled_from(["telegram", "Telegram", "TELEGRAM", "telegram "])
_TG_IDS = st.sampled_from(["111", "0111", "00111", " 111", "111 ", "+111", "١١١"])
_NOISE = st.text(alphabet=" \t\r\n\u00a0\u200b\u3000", max_size=3)
SPELLINGS = st.one_of(
    st.builds(lambda k, s, n: k + s + n, _KINDS, _SEPS, _NAMES),
    st.builds(lambda k, s, n: k + s + n, _TG_KINDS, _SEPS, _TG_IDS),
    st.builds(lambda pre, post: pre + "web:alice" + post, _NOISE, _NOISE),
    st.sampled_from(["alice", "ALICE", "111", "web:alice", "telegram:111", "web:ALICE", "telegram:0111"]),
)


PEOPLE = f'[people.alice]\nweb = "alice"\ntelegram = {ALICE_TG}\n'


def _config(extra: str) -> Config:
    digest = hash_password(PASSWORD, n=2**10)
    return lambda telegram, slack: (
        web_section(["alice", "bob"], digest)
        + telegram_section(telegram, [ALICE_TG, BOB_TG])
        + "[policies.pair]\ntimeout = '1h'\nquorum = 2\n"
        + extra
    )


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async for s in stack_of(tmp_path, _config("")):
        yield s


@pytest.fixture
async def people(tmp_path: Path) -> AsyncIterator[Stack]:
    """Web user alice and Telegram user 111 are one person."""
    async for s in stack_of(tmp_path, _config(PEOPLE)):
        yield s


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spelling=SPELLINGS)
async def test_no_spelling_of_the_requester_lets_her_approve(stack: Stack, spelling: str) -> None:
    status, body = await stack.suspend(requested_by=spelling, channels=["web", f"telegram:{CHAT}"])
    if status == 400:
        assert body["error"]["details"]["field"] == "requested_by"
        return
    assert status == 201, body
    approval_id = body["id"]
    requester = (await stack.approval(approval_id))["requested_by"]
    assert requester in ("web:alice", f"telegram:{ALICE_TG}")  # canonical, and still hers
    if requester == "web:alice":
        await stack.sign_in("alice")
        await stack.web_decide(approval_id)
    else:
        press = stack.press(ALICE_TG, approval_id, Outcome.APPROVE, await stack.card(approval_id), "alice")
        assert await stack.send(press) == 200
        assert stack.answer(press) == "Not authorised"
    view = await stack.approval(approval_id)
    assert view["status"] == "waiting_approval" and view["votes"] == []
    await stack.sign_in("bob")  # somebody else may: the refusal is about who she is
    assert await stack.web_decide(approval_id) == 303
    assert (await stack.approval(approval_id))["status"] == "approved"


async def test_identities_are_stored_canonical_and_refused_by_field(stack: Stack) -> None:
    status, body = await stack.suspend(approvers=["WEB:alice"])
    assert status == 400 and body["error"]["details"]["field"] == "approvers[0]"
    status, body = await stack.suspend(approvers=["web:bob", "telegram:0222 "])
    assert status == 400 and body["error"]["details"]["field"] == "approvers[1]"
    status, body = await stack.suspend(approvers=["web:BOB", "telegram:0222"], requested_by="web:Alice")
    assert status == 201, body
    view = await stack.approval(body["id"])
    assert view["approvers"] == ["web:bob", "telegram:222"] and view["requested_by"] == "web:alice"


async def test_the_requester_check_covers_every_identity_of_the_person(people: Stack) -> None:
    stack = people
    status, body = await stack.suspend(requested_by="web:alice", channels=["web", f"telegram:{CHAT}"])
    assert status == 201, body
    press = stack.press(ALICE_TG, body["id"], Outcome.APPROVE, await stack.card(body["id"]), "alice")
    assert await stack.send(press) == 200 and stack.answer(press) == "Not authorised"
    assert (await stack.approval(body["id"]))["status"] == "waiting_approval"


async def test_a_person_counts_once_in_a_quorum(people: Stack) -> None:
    stack = people
    status, body = await stack.suspend(policy="pair", channels=["web", f"telegram:{CHAT}"])
    assert status == 201, body
    approval_id = body["id"]
    await stack.sign_in("alice")
    assert await stack.web_decide(approval_id) == 303
    message_id = await stack.card(approval_id)
    press = stack.press(ALICE_TG, approval_id, Outcome.APPROVE, message_id, "alice")
    assert await stack.send(press) == 200
    assert stack.answer(press) == "You already approved; waiting for more approvals"
    view = await stack.approval(approval_id)
    assert view["status"] == "waiting_approval" and view["quorum"]["approvals"] == 1
    bob = stack.press(BOB_TG, approval_id, Outcome.APPROVE, message_id, "bob")
    assert await stack.send(bob) == 200 and stack.answer(bob) == "Approved"
    view = await stack.approval(approval_id)
    assert view["status"] == "approved" and view["quorum"]["approvals"] == 2
    votes = {v["approver"]: v.get("person") for v in view["votes"]}
    assert votes == {"web:alice": "alice", f"telegram:{BOB_TG}": None}  # the audit names the person
