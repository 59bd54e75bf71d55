"""What an agent may choose about its own policy: the pure rules, and how a suspend's `policy`
resolves against the config."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gateway.core.errors import ConfigError, PolicyNotAllowed, UnknownPolicy, ValidationError
from gateway.core.models import OnTimeout, Outcome, Policy
from gateway.core.policy_bounds import AgentBounds, check_inline, choose, parse_bounds
from gateway.core.principals import Principal
from gateway.service.policies import resolve_policy
from gateway.testing import make_settings

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)
AGENT, OPERATOR = Principal("agent", "billing"), Principal("operator", "alice")
POLICIES = {
    "default": {"quorum": 2},
    "payments": {"timeout": "1h"},
    "content": {
        "timeout": "1h",
        "on_timeout": "approve",
        "agent_may_set": ["timeout", "remind"],
        "max_timeout": "1d",
        "min_timeout": "1m",
    },
}


def settings(mode: str = "restrict") -> Any:
    return make_settings("sqlite:///x.db", {"policies": POLICIES, "security": {"inline_policies": mode}})


def refused(field: str, value: Any, deadline: datetime | None = None, mode: str = "restrict") -> PolicyNotAllowed:
    with pytest.raises(PolicyNotAllowed) as err:
        resolve_policy(settings(mode), value, deadline=deadline, principal=AGENT, now=NOW)
    assert err.value.field == field and err.value.status == 403, err.value.message
    return err.value


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"on_timeout": "approve"}, "policy.on_timeout"),
        ({"on_timeout": "escalate", "escalate_to": ["web"], "after_escalation": "approve"}, "policy.after_escalation"),
        ({"quorum": 1}, "policy.quorum"),
        ({"name": "payments", "timeout": "1s", "on_timeout": "approve"}, "policy.timeout"),  # the finding
        ({"name": "default", "quorum": 1}, "policy.quorum"),
    ],
)
def test_restrict_refuses_what_approves_by_itself_or_lowers_the_quorum(policy: dict[str, Any], field: str) -> None:
    refused(field, policy)


def test_restrict_keeps_inline_policies_that_only_wait_or_reject() -> None:
    policy = resolve_policy(settings(), {"timeout": "5m", "quorum": 3, "name": "mine"}, principal=AGENT, now=NOW)
    assert (policy.name, policy.timeout, policy.on_timeout, policy.quorum) == (
        "mine",
        timedelta(minutes=5),
        OnTimeout.REJECT,
        3,
    )


def test_deny_refuses_every_inline_policy_and_allow_takes_them_all() -> None:
    refused("policy", {"timeout": "5m"}, mode="deny")
    refused("policy", Policy(name="x"), mode="deny")  # built in process too
    allowed = resolve_policy(settings("allow"), {"on_timeout": "approve"}, principal=AGENT, now=NOW)
    assert allowed.on_timeout is OnTimeout.APPROVE
    assert resolve_policy(settings("deny"), "payments", principal=AGENT, now=NOW).name == "payments"


def test_in_process_callers_are_held_to_the_mode_and_operators_are_not() -> None:
    with pytest.raises(PolicyNotAllowed):
        resolve_policy(settings(), Policy(name="p", on_timeout=OnTimeout.APPROVE), now=NOW)
    trusted = resolve_policy(settings("deny"), {"on_timeout": "approve"}, principal=OPERATOR, now=NOW)
    assert trusted.on_timeout is OnTimeout.APPROVE


def test_a_named_policy_with_the_agents_choices() -> None:
    s = settings()
    chosen = resolve_policy(s, {"name": "content", "timeout": "2h", "remind": ["5m"]}, principal=AGENT, now=NOW)
    assert (chosen.name, chosen.timeout, chosen.remind, chosen.on_timeout) == (
        "content",
        timedelta(hours=2),
        (timedelta(minutes=5),),
        OnTimeout.APPROVE,
    )
    deadline = NOW + timedelta(hours=3, microseconds=7)
    timed = resolve_policy(s, "content", deadline=deadline, principal=AGENT, now=NOW)
    assert NOW + timed.timeout == deadline  # lands exactly on it  # type: ignore[operator]
    assert resolve_policy(s, "content", principal=AGENT, now=NOW) is s.policies["content"]  # no choice: as is


@pytest.mark.parametrize(
    ("value", "deadline", "field"),
    [
        ({"name": "content", "on_timeout": "reject"}, None, "policy.on_timeout"),  # not in agent_may_set
        ({"name": "content", "timeout": "2d"}, None, "policy.timeout"),  # over max_timeout
        ({"name": "content", "timeout": "10s"}, None, "policy.timeout"),  # under min_timeout
        ({"name": "content", "timeout": "never"}, None, "policy.timeout"),
        ("content", NOW + timedelta(days=2), "deadline"),
        ("payments", NOW + timedelta(minutes=5), "deadline"),  # payments lets the agent set nothing
        ({"name": "payments", "remind": ["1m"]}, None, "policy.remind"),
    ],
)
def test_choices_outside_the_bounds_are_refused(value: Any, deadline: datetime | None, field: str) -> None:
    refused(field, value, deadline)


def test_a_deadline_must_be_in_the_future_and_given_once() -> None:
    s = settings()
    for value, deadline in (("content", NOW), ({"name": "content", "timeout": "2h"}, NOW + timedelta(hours=1))):
        with pytest.raises(ValidationError) as err:
            resolve_policy(s, value, deadline=deadline, principal=AGENT, now=NOW)
        assert err.value.field == "deadline"
    with pytest.raises(ValidationError) as err:  # reminders still need to fit the chosen timeout
        resolve_policy(s, {"name": "content", "remind": ["2h"]}, principal=AGENT, now=NOW)
    assert err.value.field == "policy.remind[0]"
    with pytest.raises(UnknownPolicy):
        resolve_policy(s, "nope", principal=AGENT, now=NOW)


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"agent_may_set": ["timeout"]}, "policies.p.max_timeout"),  # the timeout needs an explicit bound
        ({"agent_may_set": ["colour"]}, "policies.p.agent_may_set[0]"),
        ({"agent_may_set": "timeout", "max_timeout": "1h"}, None),  # from the environment: 'a,b'
        ({"max_timeout": "1h", "min_timeout": "2h", "agent_may_set": ["timeout"]}, "policies.p.min_timeout"),
        ({"max_timeout": "soon"}, "policies.p.max_timeout"),
    ],
)
def test_bounds_in_the_config_name_the_bad_key(body: dict[str, Any], key: str | None) -> None:
    if key is None:
        s = make_settings("sqlite:///x.db", {"policies": {"p": {"timeout": "1h", **body}}})
        assert s.policy_bounds["p"] == AgentBounds(frozenset({"timeout"}), timedelta(hours=1))
        return
    with pytest.raises(ConfigError) as err:
        make_settings("sqlite:///x.db", {"policies": {"p": {"timeout": "1h", **body}}})
    assert err.value.key == key


def test_the_pure_rules() -> None:
    default = Policy(quorum=2)
    check_inline(Policy(on_timeout=OnTimeout.APPROVE), "allow", default)
    with pytest.raises(PolicyNotAllowed):
        check_inline(Policy(after_escalation=Outcome.APPROVE, quorum=2), "restrict", default)
    base = Policy(name="n", timeout=timedelta(hours=1))
    assert choose(base, AgentBounds(), {}, None, NOW) is base
    assert parse_bounds({}) == AgentBounds()
