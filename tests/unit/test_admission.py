"""Decided approvals first (gateway.core.admission): the pure hold decision, and the gate's waits
driven by an injected clock (nothing sleeps through the bound in real time)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from gateway.core.admission import Admission, Gate
from gateway.core.durations import format_duration, parse_duration
from gateway.core.errors import ConfigError
from gateway.testing import FakeClock, make_settings

T0 = FakeClock().now()


def test_no_backlog_holds_nothing() -> None:
    assert Admission(0.25).hold(T0, T0) == 0.0


def test_a_backlog_holds_new_work_until_the_bound() -> None:
    a = Admission(0.25)
    a.unlaunched.add("apr_1")
    assert a.hold(T0, T0) == pytest.approx(0.25)
    assert a.hold(T0, T0 + timedelta(seconds=0.1)) == pytest.approx(0.15)
    assert a.hold(T0, T0 + timedelta(seconds=0.25)) == 0.0  # bounded: nothing starves
    a.unlaunched.clear()
    a.due = True  # queued by a commit, not claimed yet: a backlog too
    assert a.hold(T0, T0) == pytest.approx(0.25)


def test_a_zero_bound_turns_it_off() -> None:
    a = Admission(0.0)
    a.due = True
    assert a.hold(T0, T0) == 0.0


async def _pending(task: asyncio.Task[object]) -> bool:
    for _ in range(5):
        await asyncio.sleep(0)
    return not task.done()


async def test_a_held_suspend_goes_when_the_job_launches() -> None:
    held: list[float] = []
    clock = FakeClock()
    gate = Gate(clock, 0.25, held=held.append)
    gate.claimed(["apr_1"], more=False)
    task = asyncio.create_task(gate.admit())
    assert await _pending(task)
    clock.advance(0.05)
    gate.launched("apr_1")
    await asyncio.wait_for(task, 1)
    assert held == [pytest.approx(0.05)]
    assert not gate.backlog


async def test_a_held_suspend_goes_once_the_bound_passes() -> None:
    held: list[float] = []
    clock = FakeClock()
    gate = Gate(clock, 0.25, held=held.append)
    gate.queued()
    task = asyncio.create_task(gate.admit())
    assert await _pending(task)
    clock.advance(0.1)
    gate.claimed(["apr_2"], more=True)  # the backlog changed but did not clear: it waits on
    gate.recheck()
    assert await _pending(task)
    clock.advance(0.15)
    gate.recheck()  # still a backlog, but the bound has passed
    await asyncio.wait_for(task, 1)
    assert held == [pytest.approx(0.25)]
    assert gate.backlog


async def test_with_no_backlog_a_suspend_is_not_held() -> None:
    held: list[float] = []
    gate = Gate(FakeClock(), 0.25, held=held.append)
    await gate.admit()
    gate.claimed([], more=False)  # a claim that took everything due: no backlog
    await gate.admit()
    assert held == []
    assert await gate.wait() is None


async def test_a_stopped_worker_holds_nothing() -> None:
    gate = Gate(FakeClock(), 0.25)
    gate.claimed(["apr_1"], more=True)
    task = asyncio.create_task(gate.wait())
    assert await _pending(task)
    gate.clear()
    assert await asyncio.wait_for(task, 1) == 0.0


def test_admission_wait_setting() -> None:
    url = "sqlite:///:memory:"
    assert make_settings(url).scheduler.admission_wait == timedelta(milliseconds=250)
    assert make_settings(url, {"scheduler": {"admission_wait": "0s"}}).scheduler.admission_wait == timedelta(0)
    with pytest.raises(ConfigError, match=r"scheduler\.admission_wait"):
        make_settings(url, {"scheduler": {"admission_wait": "6s"}})
    with pytest.raises(ConfigError, match=r"scheduler\.admission_wait"):  # a held post is claimed already
        make_settings(url, {"scheduler": {"admission_wait": "500ms"}, "store": {"lease": "1s"}})


def test_a_sub_second_duration_is_shown_as_it_is() -> None:
    """The settings reference and `config show` render the 250ms default as 250ms, not 0s."""
    assert format_duration(timedelta(milliseconds=250)) == "250ms"
    assert format_duration(timedelta(seconds=61.5)) == "1m1s500ms"
    assert parse_duration(format_duration(timedelta(seconds=61.5))) == timedelta(seconds=61.5)
    assert format_duration(timedelta(seconds=90)) == "1m30s"


async def test_a_clock_stepped_back_does_not_stretch_the_wait() -> None:
    """The bound is measured on the event loop's monotonic time: a wall clock set back an hour
    while a suspend is held must not hold it for an hour."""
    clock = FakeClock()
    gate = Gate(clock, 0.1)
    gate.queued()
    task = asyncio.create_task(gate.wait())
    assert await _pending(task)
    clock.advance(-3600)  # the wall clock steps back
    gate.recheck()
    started = asyncio.get_running_loop().time()
    waited = await asyncio.wait_for(task, 2)
    assert waited is not None and waited == pytest.approx(0.1, abs=0.1)
    assert asyncio.get_running_loop().time() - started < 1
