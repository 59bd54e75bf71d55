"""The one observer protocol: a fan-out calls only the observers that implement an event."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.core.models import OutboxKind
from gateway.core.observers import Observer, Observers

NOW = datetime(2030, 1, 1, tzinfo=UTC)


class Loops(Observer):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def outbox_queued(self) -> None:
        self.calls.append("outbox")

    def wake_at(self, when: datetime) -> None:
        self.calls.append(f"wake {when.year}")


class Deliveries(Observer):
    def __init__(self) -> None:
        self.seen: list[tuple[str, OutboxKind, str]] = []

    def delivered(self, channel: str, kind: OutboxKind, event: str) -> None:
        self.seen.append((channel, kind, event))


def test_each_report_reaches_the_observers_that_implement_it() -> None:
    loops, deliveries = Loops(), Deliveries()
    fan = Observers(loops)
    assert fan.add(deliveries) is deliveries
    fan.outbox_queued()
    fan.jobs_queued()  # nobody implements it: nothing happens
    fan.wake_at(NOW)
    fan.delivered("web", OutboxKind.POST, "card_posted")
    fan.attempt("agent", "succeeded", 1.0)
    assert loops.calls == ["outbox", "wake 2030"]
    assert deliveries.seen == [("web", OutboxKind.POST, "card_posted")]
    assert len(fan._wake) == 1 and not fan._jobs  # only implementations are kept


def test_a_runtime_wires_its_loops_and_its_metrics(runtime: object) -> None:
    from gateway.runtime import Runtime, WakeUps

    assert isinstance(runtime, Runtime)
    members = [fn.__self__ for fn in runtime.observers._wake]  # type: ignore[attr-defined]
    assert any(isinstance(m, WakeUps) for m in members)
    assert runtime.service.observer is runtime.observers and runtime.outbox.observer is runtime.observers
