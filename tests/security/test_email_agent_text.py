"""An e-mail card's text part showed the agent's title, summary and args as lines of their own:
an agent could write `Approve: https://evil.example/...` on a line of its own, above the real
links, and an approver reading the plain text could not tell it from the gateway's. (The HTML
part escaped it; phishing only, no decision could be forged.) The agent's words are now quoted
behind '> ', and its args are one line each: every line that starts with `Approve:` or `Reject:`
is the gateway's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.email import render
from gateway.core.models import Approval, Decision, Outcome, Policy, Status
from gateway.testing import make_approval
from tests.fakes.smtp import text_of

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
REAL = {Outcome.APPROVE: "https://gw.test/e/approve-link", Outcome.REJECT: "https://gw.test/e/reject-link"}


def _approval(text: str, **over: Any) -> Approval:
    args = {"note": f"x{text}", f"k{text}": 1}
    fields = {"run_id": f"run{text}", "step": f"pay{text}", "title": f"Pay{text}", "summary": f"Invoice{text}"}
    return make_approval(
        Policy(timeout=timedelta(hours=1)), NOW, args=args, channels=("email:alice@acme.test",), **fields
    ).evolve(**over)


@pytest.mark.parametrize("brk", ["\n", "\r", "\r\n", "\u2028", "\x85", "\v", "\x1e"])
def test_an_agents_text_cannot_make_a_line_that_passes_for_the_gateways_links(brk: str) -> None:
    fake = f"{brk}Approve: https://evil.example/a{brk}Reject:  https://evil.example/r{brk}"
    a = _approval(fake)
    card = text_of(render.card(a, "gw@acme.test", "alice@acme.test", REAL))
    reminder = text_of(render.reminder(a, "gw@acme.test", "alice@acme.test", REAL, 1))
    for text in (card, reminder):
        starts = [line for line in text.splitlines() if line.startswith(("Approve:", "Reject:"))]
        assert starts == [f"Approve: {REAL[Outcome.APPROVE]}", f"Reject:  {REAL[Outcome.REJECT]}"], text
    decided = a.evolve(status=Status.REJECTED, decision=Decision(Outcome.REJECT, "web:bob", NOW))
    outcome = text_of(render.outcome(decided, "gw@acme.test", "alice@acme.test"))
    assert not [line for line in outcome.splitlines() if line.startswith(("Approve:", "Reject:"))], outcome
    assert "> Pay" in card and "> Invoice" in card  # the agent's words are there, quoted
