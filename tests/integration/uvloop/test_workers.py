"""The worker tests again, on uvloop: command and entrypoint workers are subprocesses of the
serving loop (pipes, process groups, timeouts that kill the group), url workers its HTTP client."""

from __future__ import annotations

import asyncio

import uvloop

from tests.integration.test_worker import *  # noqa: F403
from tests.integration.test_worker_kinds import *  # noqa: F403


async def test_the_tests_here_run_on_uvloop() -> None:
    assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
