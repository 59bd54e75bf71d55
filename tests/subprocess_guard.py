"""The guard of `make check`: a test that starts a process without the `subprocess` mark fails.

`make check` runs `-m "not subprocess"`, the tests that start no process. The guard keeps that
selection true as tests are added: a new test that starts one (a `serve`, a worker job, a schema
check's process pool, a CLI) fails in the fast loop until it is marked, and then runs only in
`make test`. Every way to start a process is seen: subprocess.Popen (asyncio's subprocesses use
it), os.fork, os.posix_spawn, os.exec*, os.system through audit hooks (PEP 578), and
multiprocessing's `spawn` start, which raises no audit event, through its Process.start. The
start is refused (nothing runs), and the test fails even if the code it ran caught the error.
"""

from __future__ import annotations

import multiprocessing.process
import sys
from collections.abc import Callable, Generator
from typing import Any

import pytest

_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system"})
MARK = "subprocess"


class SubprocessStarted(RuntimeError):
    """A test without the `subprocess` mark started a process."""


class Guard:
    """A pytest plugin: armed during each phase (setup, call, teardown) of each test."""

    def __init__(self) -> None:
        self.armed = False
        self.started: list[str] = []
        sys.addaudithook(self._audit)  # cannot be removed; it does nothing while disarmed
        start: Callable[[Any], None] = multiprocessing.process.BaseProcess.start

        def guarded_start(process: Any) -> None:
            self._refuse("multiprocessing.Process.start")
            start(process)

        multiprocessing.process.BaseProcess.start = guarded_start  # type: ignore[method-assign]

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event in _EVENTS:
            self._refuse(f"{event} {args[:2]!r}"[:200])

    def _refuse(self, what: str) -> None:
        if self.armed:
            self.started.append(what)
            raise SubprocessStarted(f"this test started a process ({what}) but is not marked `{MARK}`")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        return (yield from self._phase(item))

    def _phase(self, item: pytest.Item) -> Generator[None, None, None]:
        if item.get_closest_marker(MARK) is not None:
            return (yield)
        self.armed, self.started = True, []
        try:
            result = yield
        finally:
            self.armed = False
        if self.started:
            pytest.fail(
                f"started a process ({'; '.join(self.started)}): mark the test "
                f"`@pytest.mark.{MARK}` (it then runs in `make test`, not in `make check`)",
                pytrace=False,
            )
        return result
