"""Pure rendering of the Teams cards: an agent's text cannot make Markdown, the views differ by
who looks, and every card fits Teams' limits."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.teams import render
from gateway.core.models import Approval, EditTerms, Policy, Status

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def _approval(**over: Any) -> Approval:
    base = Approval(
        id="a1",
        idempotency_key="k",
        run_id="run-1",
        step="pay",
        title="Pay",
        summary="",
        args={"amount": 4200},
        state=None,
        channels=("web",),
        approvers=(),
        policy=Policy(timeout=timedelta(hours=1)),
        worker=None,
        requested_by=None,
        status=Status.WAITING,
        created_at=NOW,
        deadline=NOW + timedelta(hours=1),
        args_hash="h0",
    )
    return base.evolve(**over)


UNESCAPED_LINK = re.compile(r"(?<!\\)\[[^\]]*(?<!\\)\]\((?<!\\)")


@pytest.mark.parametrize(
    "text",
    ["[Click to verify](https://evil.example)", "**urgent** _now_", "- one\n- two", "1. first", "# big", "a\\*b*"],
)
def test_an_agents_text_makes_no_markdown(text: str) -> None:
    card = render.card(_approval(title=text, summary=text, args={text: text}), render.View(ref="r"))
    texts = [b["text"] for b in card["body"] if b["type"] == "TextBlock"]
    facts = [v for b in card["body"] if b["type"] == "FactSet" for f in b["facts"] for v in f.values()]
    for shown in texts[:2] + facts:
        assert not UNESCAPED_LINK.search(shown)
        assert not re.search(r"(?<!\\)\*\*|(?<!\\)_|^[-#]|^\d+\.", shown, re.MULTILINE), shown


def test_only_an_approvers_view_has_the_buttons() -> None:
    a = _approval()
    shared = render.card(a, render.View(ref="r", user_ids=("29:1a",)))
    mine = render.card(a, render.View(ref="r", seen="t", buttons=True))
    assert [x["verb"] for x in shared["actions"]] == ["refresh"] and shared["refresh"]["userIds"] == ["29:1a"]
    assert mine["actions"][0] == {
        "type": "Action.Execute",
        "title": "Approve",
        "verb": "approve",
        "data": {"ref": "r", "seen": "t"},
        "style": "positive",
        "associatedInputs": "none",
    }
    nobody = render.card(a, render.View(ref="r", decides=False))
    assert "actions" not in nobody and "refresh" not in nobody


@pytest.mark.parametrize("size", [1, 50, 400])
@pytest.mark.parametrize("editable", [False, True])
def test_every_card_fits_teams_limit(size: int, editable: bool) -> None:
    args = {f"k{i}": "*" * 3000 for i in range(size)}
    terms = EditTerms({"type": "object"}, tuple(args)) if editable else None
    a = _approval(summary="[x]" * 1300, args=args, terms=terms)
    card = render.fitted(a, render.View(ref="r" * 60, seen="t", buttons=True, user_ids=("29:1x",) * 60))
    assert len(json.dumps(render.message(a, card)).encode()) < 28 * 1024
