"""The rules' operator tools on real data, on a SQLite file and on PostgreSQL: `POST
/v1/rules/evaluate` (a dry run with the agent's stored budgets) and `rules report` (what each
rule decided or would have, against what people decided), through the service and the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.cli import rules as rules_cli
from gateway.core.durations import parse_duration
from gateway.core.models import Outcome
from gateway.core.principals import Principal, derived_name
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.service import SuspendRequest
from gateway.settings import Settings
from gateway.testing import TEST_API_KEY, FakeClock, make_settings
from tests.conftest import AUTH, OPERATOR

AGENT_NAME = derived_name(TEST_API_KEY)  # AUTH's agent
BILLING = Principal("agent", "billing")  # type: ignore[arg-type]
RULES = [
    {
        "name": "small-charges",
        "when": 'step == "charge" && args.amount < 5000',
        "then": "allow",
        "mode": "shadow",
    },
    {"name": "no-drops", "when": 'step == "drop"', "then": "deny", "reason": "never"},
    {
        "name": "daily-budget",
        "when": 'step == "pay" && spent("amount", "24h") + args.amount <= 1000',
        "then": "allow",
    },
    {"name": "big", "when": 'step == "charge" && args.amount >= 1000000', "then": "ask"},
]


@pytest.fixture
def db_url(store_url: str) -> str:
    return store_url  # every test here on both backends


@pytest.fixture
def settings(db_url: str) -> Settings:
    return make_settings(db_url, {"rule": RULES, "web": {"approvers": ["alice"]}})


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime.now(UTC))  # the CLI's `--since 7d` counts back from the real now


# ---------------------------------------------------------------- POST /v1/rules/evaluate
async def test_evaluate_reads_the_agents_budget_and_suspends_nothing(
    aiohttp_client: Any, settings: Settings, clock: FakeClock
) -> None:
    rt = Runtime(settings, clock=clock, owner="test")
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    pay = {"run_id": "r1", "step": "pay", "title": "pay", "args": {"amount": 600}}
    r = await client.post("/v1/suspend", json=pay, headers=AUTH)
    assert r.status == 201 and (await r.json())["status"] == "approved"  # 600 of the 1000

    probe = {"step": "pay", "args": {"amount": 600}, "agent": AGENT_NAME}
    r = await client.post("/v1/rules/evaluate", json=probe, headers=OPERATOR)
    assert r.status == 200, await r.text()
    out = await r.json()
    assert (out["outcome"], out["rule"]) == ("ask", None)  # 600 + 600 > 1000: the stored 600 counted
    assert len(out["rules_hash"]) == 64 and out["shadow"] == [] and out["errors"] == []

    r = await client.post("/v1/rules/evaluate", json=probe | {"args": {"amount": 400}}, headers=OPERATOR)
    assert (await r.json())["rule"] == "daily-budget"  # 600 + 400 fits
    # another agent's budget is its own: nothing spent yet
    r = await client.post("/v1/rules/evaluate", json=probe | {"agent": "agent:Other"}, headers=OPERATOR)
    assert (await r.json())["rule"] == "daily-budget"
    # a shadow rule is reported, not applied; a suspend body (title, run_id) is accepted as is
    full = {"run_id": "r9", "title": "charge", "step": "charge", "args": {"amount": 10}, "agent": "billing"}
    r = await client.post("/v1/rules/evaluate", json=full, headers=OPERATOR)
    out = await r.json()
    assert out["outcome"] == "ask" and out["shadow"] == [{"rule": "small-charges", "outcome": "allow", "reason": ""}]

    r = await client.get("/v1/approvals", headers=OPERATOR)
    assert len((await r.json())["items"]) == 1  # the dry runs suspended nothing


async def test_evaluate_is_for_operators_and_names_bad_fields(
    aiohttp_client: Any, settings: Settings, clock: FakeClock
) -> None:
    rt = Runtime(settings, clock=clock, owner="test")
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings, runtime=rt, background=False))
    probe = {"step": "pay", "args": {"amount": 1}, "agent": AGENT_NAME}
    r = await client.post("/v1/rules/evaluate", json=probe, headers=AUTH)
    assert r.status == 403 and (await r.json())["error"]["code"] == "operator_required"
    r = await client.post("/v1/rules/evaluate", json=probe)
    assert r.status == 401
    for bad, field in (
        ({"step": "pay"}, "agent"),
        ({"agent": "billing"}, "step"),
        (probe | {"agent": "not a name!"}, "agent"),
        (probe | {"rules": []}, "rules"),
        (probe | {"args": [1]}, "args"),
    ):
        r = await client.post("/v1/rules/evaluate", json=bad, headers=OPERATOR)
        error = (await r.json())["error"]
        assert r.status == 400 and field in error["message"], (bad, error)


# ---------------------------------------------------------------- rules report
async def _traffic(rt: Runtime) -> None:
    """Suspends as the agent `billing`, and people's decisions on some of them."""
    svc = rt.service

    async def suspend(run: str, step: str, **args: Any) -> str:
        req = SuspendRequest(run_id=run, step=step, title=f"{step} {run}", args=args)
        approval, created = await svc.suspend(req, BILLING)
        assert created
        return approval.id

    await suspend("p1", "pay", amount=600)  # allowed by daily-budget (spent() counts every approved step)
    await suspend("p2", "pay", amount=600)  # over the budget: the default (ask), left waiting
    small = [await suspend(f"c{i}", "charge", amount=100 * (i + 1)) for i in range(5)]  # shadow: would allow
    for approval_id, outcome in zip(small, [Outcome.APPROVE] * 3 + [Outcome.REJECT], strict=False):
        await svc.decide(approval_id, outcome, "web:alice", channel="web")  # small[4] stays waiting
    big = await suspend("b1", "charge", amount=2_000_000)
    await svc.decide(big, Outcome.REJECT, "web:alice", channel="web")
    await suspend("d1", "drop")  # denied by no-drops


EXPECTED = [
    "small-charges (shadow): would have allowed 5 of 9; humans rejected 1 of those 5"
    " (humans approved 3, humans rejected 1, waiting 1)",
    "no-drops: denied 1 of 9",
    "daily-budget: allowed 1 of 9",
    "big: asked about 1 of 9 (humans rejected 1)",
    "(default): asked about 6 of 9 (humans approved 3, humans rejected 1, waiting 2)",
]


async def test_the_report_tallies_rules_against_peoples_decisions(settings: Settings, clock: FakeClock) -> None:
    rt = Runtime(settings, clock=clock, owner="test")
    await rt.start(background=False)
    try:
        await _traffic(rt)
        report = await rt.rule_ops.report(clock.now() - parse_duration("7d"))
        later = await rt.rule_ops.report(clock.now() + parse_duration("1s"))
    finally:
        await rt.stop()
    assert [line.text() for line in report.lines] == EXPECTED
    assert report.suspends == 9 and len(report.rules_hashes) == 1
    assert later.suspends == 0 and [ln.matched for ln in later.lines] == [0, 0, 0, 0]  # the window counts


async def test_the_report_command_prints_text_and_json(
    settings: Settings, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    rt = Runtime(settings, clock=clock, owner="test")
    await rt.start(background=False)
    try:
        await _traffic(rt)
    finally:
        await rt.stop()
    assert await rules_cli.report(settings, "7d") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(": 9 suspend(s) through the rules") and out[1:] == EXPECTED
    assert await rules_cli.report(settings, "7d", as_json=True) == 0
    doc = json.loads(capsys.readouterr().out)
    shadow = doc["rules"][0]
    assert (shadow["rule"], shadow["mode"], shadow["outcome"], shadow["matched"], shadow["of"]) == (
        "small-charges",
        "shadow",
        "allow",
        5,
        9,
    )
    assert shadow["endings"] == {"humans_approved": 3, "humans_rejected": 1, "waiting": 1}
    assert doc["suspends"] == 9 and [r["rule"] for r in doc["rules"]][-1] == "(default)"


async def test_rules_test_reads_the_stored_budget(
    settings: Settings, clock: FakeClock, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    rt = Runtime(settings, clock=clock, owner="test")
    await rt.start(background=False)
    try:
        await rt.service.suspend(SuspendRequest(run_id="p", step="pay", title="pay", args={"amount": 600}), BILLING)
    finally:
        await rt.stop()
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"agent": "billing", "step": "pay", "args": {"amount": 600}}))
    assert await rules_cli.test(settings, str(body), as_json=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["outcome"], out["rule"], out["budgets"]) == ("ask", None, "read from the store")
    assert await rules_cli.test(settings, str(body), as_json=True, no_store=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["outcome"], out["rule"], out["budgets"]) == ("allow", "daily-budget", "read as 0: --no-store")


async def test_rules_test_without_a_store_reads_budgets_as_zero(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(f"sqlite:///{tmp_path / 'absent.db'}", {"rule": RULES})
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"agent": "billing", "step": "pay", "args": {"amount": 600}}))
    assert await rules_cli.test(settings, str(body)) == 0
    out = capsys.readouterr().out
    assert "rule: daily-budget" in out and f"budgets: read as 0: no SQLite file at {tmp_path / 'absent.db'}" in out
    assert not (tmp_path / "absent.db").exists()  # a dry run creates no store
