"""What the approval page shows of edited args and of a title that quotes them (pure)."""

from __future__ import annotations

from typing import Any

from gateway.core.models import Proposal
from gateway.http.web.argsview import TitlePart, arg_rows, edit_state, plain_title, summary_text, title_parts
from tests.unit.test_edits import approval


def _proposed(title: str, args: dict[str, Any], edited: dict[str, Any]) -> Any:
    proposal = Proposal(edited, [], "web:bob", 1, "h1")
    return approval(title=title, args=args, proposal=proposal)


def test_a_quoted_value_shows_its_change_in_place() -> None:
    a = _proposed("Pay 4200 EUR to ACME", {"amount": 4200, "currency": "EUR"}, {"amount": 3900, "currency": "USD"})
    swapped = [TitlePart("3900", "4200"), TitlePart(" "), TitlePart("USD", "EUR")]
    assert title_parts(a) == [TitlePart("Pay "), *swapped, TitlePart(" to ACME")]
    assert plain_title(a) == "Pay 3900 USD to ACME" and edit_state(a) == "changes proposed"


def test_a_value_only_part_of_a_word_or_quoted_twice_is_left_as_it_is() -> None:
    for title in ("Pay 42000 to ACME", "Pay 4200.50", "Pay 4200, then 4200 again", "Invoice x4200"):
        a = _proposed(title, {"amount": 4200}, {"amount": 3900})
        assert plain_title(a) == title, title
    flags = _proposed("Notify: true", {"notify": True}, {"notify": False})
    assert plain_title(flags) == "Notify: true"  # booleans are not swapped in words


def test_rows_hold_the_current_values_with_what_was_asked() -> None:
    a = _proposed("t", {"amount": 4200, "memo": "May", "old": 1}, {"amount": 3900, "memo": "May", "new": [1, 2]})
    rows = {r.name: r for r in arg_rows(a)}
    assert (rows["amount"].value, rows["amount"].before, rows["amount"].change) == ("3900", "4200", "changed")
    assert (rows["memo"].value, rows["memo"].before, rows["memo"].change) == ("May", None, "")
    assert rows["new"].change == "added" and rows["new"].block and rows["new"].value.startswith("[\n")
    assert (rows["old"].value, rows["old"].before, rows["old"].change) == ("(removed)", "1", "removed")
    assert edit_state(approval()) == "" and [r.change for r in arg_rows(approval())] == ["", ""]


def test_a_summary_ending_in_langchains_repr_of_the_args_names_the_tool_instead() -> None:
    args = {"invoice": "INV-1", "amount": 4200}
    langchain = f"Tool execution requires approval\n\nTool: pay\nArgs: {args}"  # its default wording
    assert summary_text(approval(summary=langchain, args=args)) == "Tool execution requires approval\n\nTool: `pay`"
    other = "Pay it?\n\nTool: pay\nArgs: {'invoice': 'INV-2'}"  # not these args: the agent's own words
    assert summary_text(approval(summary=other, args=args)) == other
