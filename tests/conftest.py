"""Shared fixtures: a FakeClock, real SQLite files, a started Runtime, and an HTTP client."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.config import Settings
from gateway.core.principals import derived_name
from gateway.http.app import create_app
from gateway.runtime import Runtime
from gateway.testing import TEST_API_KEY, TEST_OPERATOR_KEY, FakeClock, make_settings


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-subprocess",
        action="store_true",
        help="fail any test that starts a process and is not marked `subprocess` (make check)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--no-subprocess"):
        from tests.subprocess_guard import Guard

        config.pluginmanager.register(Guard(), "subprocess-guard")


AUTH = {"Authorization": f"Bearer {TEST_API_KEY}"}  # an agent
OPERATOR = {"Authorization": f"Bearer {TEST_OPERATOR_KEY}"}  # operator:test
TEST_AGENT = f"agent:{derived_name(TEST_API_KEY)}"  # AUTH's principal: its runs' namespace


@pytest.fixture(autouse=True)
def _no_hitl_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """HITL_* variables from the developer's shell must not leak into tests."""
    for name in list(os.environ):
        if name.startswith("HITL_") and name != "HITL_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)
    yield


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'gateway.db'}"


@pytest.fixture
def settings_factory(db_url: str) -> Callable[..., Settings]:
    def make(**sections: Any) -> Settings:
        return make_settings(db_url, sections)

    return make


@pytest.fixture
def settings(settings_factory: Callable[..., Settings]) -> Settings:
    return settings_factory(workers={"agent": {"command": ["true"]}}, policies={"fast": {"timeout": "1m"}})


@pytest.fixture
async def runtime(settings: Settings, clock: FakeClock) -> AsyncIterator[Runtime]:
    rt = Runtime(settings, clock=clock, owner="test")
    await rt.start(background=False)
    yield rt
    await rt.stop()


@pytest.fixture
async def client(
    aiohttp_client: Callable[..., Any], settings: Settings, clock: FakeClock
) -> AsyncIterator[TestClient[Any, Any]]:
    """The real app over real HTTP on loopback; background loops off (tests drive them)."""
    rt = Runtime(settings, clock=clock, owner="test")
    app = create_app(settings, runtime=rt, background=False)
    yield await aiohttp_client(app)


def suspend_body(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "run_id": "run-1",
        "step": "charge",
        "title": "Charge ACME $42",
        "summary": "Monthly invoice",
        "args": {"amount": 4200, "currency": "USD"},
        "state": {"cursor": 3},
    }
    body.update(over)
    return body


async def suspended(client: Any, **over: Any) -> dict[str, Any]:
    """`POST /v1/suspend` of `suspend_body(**over)` as the test agent: the reply, after a 200 or 201."""
    resp = await client.post("/v1/suspend", json=suspend_body(**over), headers=AUTH)
    assert resp.status in (200, 201), await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


# ---------------------------------------------------------------- PostgreSQL (issue 7)
@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A throwaway database for this test session (skipped if unreachable, failed under CI=true)."""
    from tests import pg

    url = pg.create_session_database()
    yield url
    pg.drop_session_database(url)


@pytest.fixture
async def pg_url(pg_database: str) -> str:
    """A postgresql:// URL to a fresh, empty schema of the session database."""
    from tests import pg

    return await pg.create_schema(pg_database)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on a SQLite file and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'gateway.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url
