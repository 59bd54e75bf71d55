"""The pure parts of outbound events: which transitions announce what, the envelope, when a
failed delivery is tried again (Retry-After, capped backoff) or given up; and `[events]`."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest

from gateway.config import load_settings
from gateway.core.errors import ConfigError
from gateway.core.events import EventKind
from gateway.core.models import Policy
from gateway.core.webhooks import EVENT_KINDS, envelope, kind_of, next_try, retry_after
from gateway.settings.events import MAX_PREVIOUS
from gateway.testing import TEST_SECRET, make_approval
from tests.events.support import SECRET

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
CAP, GIVE_UP = timedelta(minutes=10), timedelta(hours=24)


def test_which_events_are_announced() -> None:
    assert kind_of(EventKind.SUSPENDED) == "approval.requested"
    assert {kind_of(k) for k in (EventKind.APPROVED, EventKind.REJECTED, EventKind.CANCELLED)} == {"approval.decided"}
    assert kind_of(EventKind.TIMED_OUT) == "approval.timed_out"
    assert kind_of(EventKind.ESCALATED) == "approval.escalated"
    assert kind_of(EventKind.JOB_SUCCEEDED) == "job.succeeded" and kind_of(EventKind.JOB_FAILED) == "job.failed"
    for quiet in (EventKind.VOTE, EventKind.REMINDED, EventKind.JOB_RETRYING, EventKind.CARD_POSTED):
        assert kind_of(quiet) is None
    assert len(EVENT_KINDS) == 6


def test_the_envelope_is_cloudevents_1_0() -> None:
    approval = make_approval(Policy(), NOW, 7)
    doc = envelope("job.failed", "evt_1", "https://gw.example", approval, NOW, {"attempt": 3, "error": "x" * 900})
    assert {k: doc[k] for k in ("specversion", "id", "source", "type", "subject", "datacontenttype")} == {
        "specversion": "1.0",
        "id": "evt_1",
        "source": "https://gw.example",
        "type": "dev.hitl-gateway.job.failed",
        "subject": approval.id,
        "datacontenttype": "application/json",
    }
    assert doc["time"] == "2030-01-01T12:00:00Z"
    assert "state" not in doc["data"] and "sealed" not in str(doc)
    assert doc["data"]["job"]["attempt"] == 3 and len(doc["data"]["job"]["error"]) == 500


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("Wed, 01 Jan 2030 12:01:30 GMT", 90.0),
        ("Wed, 01 Jan 2030 11:00:00 GMT", 0.0),  # in the past: at once
        (None, None),
        ("soon", None),
        ("-5", None),
        ("1.5", None),  # delay-seconds is a non-negative integer
    ],
)
def test_retry_after(header: str | None, seconds: float | None) -> None:
    assert retry_after(header, NOW) == seconds


@pytest.mark.parametrize("header", ["\u00b2", "1\u00b2", "\u2460", "\u0661\u0662"])
def test_retry_after_of_digits_that_are_not_ascii_is_unreadable(header: str) -> None:
    """A receiver's header decoded from UTF-8: '²' passes str.isdigit but float() refuses it, and
    the exception would keep the event retried as an internal error, never given up. Only ASCII
    digits are delay-seconds (RFC 9110); anything else is unreadable: the backoff decides."""
    assert retry_after(header, NOW) is None


def test_backoff_starts_within_seconds_and_stops_at_the_cap() -> None:
    first = next_try(1, NOW, NOW, max_backoff=CAP, give_up_after=GIVE_UP, rand=1.0)
    assert first == 1.0
    delays = [next_try(n, NOW, NOW, max_backoff=CAP, give_up_after=GIVE_UP, rand=1.0) for n in range(1, 30)]
    assert delays == sorted(delays) and max(d for d in delays if d is not None) == CAP.total_seconds()


def test_the_receivers_delay_wins_but_not_past_the_give_up() -> None:
    later = NOW + timedelta(hours=23, minutes=59)
    assert next_try(1, NOW, NOW, max_backoff=CAP, give_up_after=GIVE_UP, server_delay=3600) == 3600
    assert next_try(9, NOW, later, max_backoff=CAP, give_up_after=GIVE_UP, server_delay=3600) == 60  # last try
    assert next_try(10, NOW, NOW + GIVE_UP, max_backoff=CAP, give_up_after=GIVE_UP) is None  # then gives up


def test_webhooks_from_the_environment_and_bounds() -> None:
    env = {
        "HITL_SECURITY_SECRET_KEYS": TEST_SECRET,
        "HITL_EVENTS_WEBHOOKS": f'[{{url = "https://siem.example/in", secret = "{SECRET}", kinds = ["job.failed"]}}]',
    }
    settings = load_settings(None, env=env)
    (hook,) = settings.events.webhooks
    assert hook.kinds == ("job.failed",) and hook.name.startswith("siem.example-")
    with pytest.raises(ConfigError, match=r"events\.give_up_after"):
        load_settings(None, env=env | {"HITL_EVENTS_GIVE_UP_AFTER": "1m"})
    with pytest.raises(ConfigError, match=r"events\.timeout"):
        load_settings(None, env=env | {"HITL_EVENTS_TIMEOUT": "1h"})
    with pytest.raises(ConfigError, match=r"half of store\.lease"):
        load_settings(None, env=env | {"HITL_EVENTS_TIMEOUT": "30s"})  # the lease is 60s


def test_previous_secrets_from_the_environment_and_their_bounds() -> None:
    old = "whsec_" + base64.b64encode(b"an-old-secret-of-32-bytes-long!!").decode()
    hooks = f'[{{url = "https://siem.example/in", secret = "{SECRET}", previous_secrets = ["{old}"]}}]'
    env = {"HITL_SECURITY_SECRET_KEYS": TEST_SECRET, "HITL_EVENTS_WEBHOOKS": hooks}
    (hook,) = load_settings(None, env=env).events.webhooks
    assert hook.previous_secrets == (old,) and hook.secrets == (SECRET, old)
    assert old not in repr(hook) and SECRET not in repr(hook)

    def refused(previous: str) -> ConfigError:
        webhooks = f'[{{url = "https://siem.example/in", secret = "{SECRET}", previous_secrets = {previous}}}]'
        with pytest.raises(ConfigError) as err:
            load_settings(None, env=env | {"HITL_EVENTS_WEBHOOKS": webhooks})
        return err.value

    err = refused(f'["whsec_{base64.b64encode(b"short").decode()}"]')
    assert err.key == "events.webhooks[0].previous_secrets[0]" and "24 to 64 random bytes" in err.problem
    err = refused(f'["{old}", "not-a-secret"]')
    assert err.key == "events.webhooks[0].previous_secrets[1]" and "whsec_" in err.problem
    assert refused(f'["{SECRET}"]').key == "events.webhooks[0].previous_secrets[0]"  # the current one again
    assert refused(f'["{old}", "{old}"]').key == "events.webhooks[0].previous_secrets[1]"
    many = [f'"whsec_{base64.b64encode(bytes([i]) * 32).decode()}"' for i in range(MAX_PREVIOUS + 1)]
    err = refused(f"[{', '.join(many)}]")
    assert err.key == "events.webhooks[0].previous_secrets" and f"at most {MAX_PREVIOUS}" in err.problem
    assert old not in str(err) and SECRET not in str(err)
