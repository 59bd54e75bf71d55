"""The attacks of issue 13, run against a real `hitl-gateway serve` subprocess.

Every gateway here has three principals besides the usual test keys: two agents
(`agent:billing`, `agent:mail`) and one operator (`operator:alice`), plus web users alice
(approver) and bob (approver). `launch(tmp_path, extra=...)` starts one with more config;
`db_counts` reads the SQLite file directly to show that a refused request stored nothing.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.http.web.auth import hash_password
from tests.procs import Gateway, free_port
from tests.webpush.support import rig as rig  # the Web Push attacks' gateway (a fixture)

SECRET = "security-secret-key-0123456789abcdef"
BILLING_KEY = "agent-billing-key-0123456789abcdef"
MAIL_KEY = "agent-mail-key-0123456789abcdef"
LEGACY_KEY = "legacy-api-key-0123456789abcdef"  # in api_keys: its own principal, agent:key-<hash>
ALICE_KEY = "operator-alice-key-0123456789abcdef"
BILLING = {"Authorization": f"Bearer {BILLING_KEY}"}
MAIL = {"Authorization": f"Bearer {MAIL_KEY}"}
LEGACY = {"Authorization": f"Bearer {LEGACY_KEY}"}
ALICE = {"Authorization": f"Bearer {ALICE_KEY}"}
PASSWORD = "correct horse battery"
HASH = hash_password(PASSWORD, n=2**10)  # cheap: the cost is read from the hash
TG_SECRET, SLACK_SECRET = "hook_secret-0123456789", "slack-signing-secret-0123456789"
CHATS = f"""
[telegram]
bot_token = "123456:TEST-token_abc"
webhook_secret = "{TG_SECRET}"
base_url = "http://127.0.0.1:9/bot"

[slack]
bot_token = "xoxb-test"
signing_secret = "{SLACK_SECRET}"
base_url = "http://127.0.0.1:9/api/"
"""  # Telegram and Slack on, their APIs unreachable: the webhooks are what is attacked
TABLES = ("approvals", "events", "outbox", "resume_jobs", "journal")

Launch = Callable[..., Gateway]


def config(
    db: Path, port: int, *, operators: bool = True, web: str | None = None, security: str = "", extra: str = ""
) -> str:
    """A gateway config: the principals above (no operator at all with `operators=False`);
    `security` adds lines to [security], `extra` more tables at the end."""
    operator_table = f'[security.operators]\nalice = "{ALICE_KEY}"\n' if operators else ""
    web_section = (
        web if web is not None else f'approvers = ["alice", "bob"]\npasswords = {{ alice = "{HASH}", bob = "{HASH}" }}'
    )
    return f"""
[server]
host = "127.0.0.1"
port = {port}
public_url = "http://127.0.0.1:{port}"
header_timeout = "2s"
body_timeout = "2s"

[store]
url = "sqlite:///{db}"

[security]
secret_keys = ["{SECRET}"]
api_keys = ["{LEGACY_KEY}"]
{security}

[security.agents]
billing = "{BILLING_KEY}"
mail = "{MAIL_KEY}"

{operator_table}
[web]
{web_section}

[workers.agent]
command = ["true"]

{extra}
"""


def make_launcher(tmp_path: Path, started: list[Gateway]) -> Launch:
    def launch(*, name: str = "gw", port: int | None = None, **kw: Any) -> Gateway:
        port = port or free_port()
        path = tmp_path / f"{name}.toml"
        path.write_text(config(tmp_path / f"{name}.db", port, **kw))
        gateway = Gateway(path, port, tmp_path / f"{name}.log").start()
        started.append(gateway)
        return gateway

    return launch


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """Start gateways for one test (stopped, by kill, at its end)."""
    started: list[Gateway] = []
    yield make_launcher(tmp_path, started)
    for gateway in started:
        gateway.stop()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway for a whole module of attacks that need no special config."""
    started: list[Gateway] = []
    yield make_launcher(tmp_path_factory.mktemp("security"), started)()
    for gw in started:
        gw.stop()


def db_path(gateway: Gateway) -> Path:
    return gateway.config.with_suffix(".db")


def db_counts(gateway: Gateway, *tables: str) -> dict[str, int]:
    """Rows per table (default: every table a request could write), read straight from the
    gateway's SQLite file (WAL: a reader sees every commit)."""
    with sqlite3.connect(f"file:{db_path(gateway)}?mode=ro", uri=True) as conn:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables or TABLES}


async def call(http: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> tuple[int, Any]:
    async with http.request(method, url, **kw) as resp:
        text = await resp.text()
        try:
            return resp.status, await resp.json(content_type=None) if text else None
        except ValueError:
            return resp.status, text


def browser() -> aiohttp.ClientSession:
    """A client that keeps cookies for 127.0.0.1 (aiohttp's default jar ignores IP hosts)."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def sign_in(http: aiohttp.ClientSession, base: str, name: str = "alice") -> str:
    """Sign in with the password form; returns the session cookie's value."""
    async with http.get(f"{base}/login") as page:
        found = re.search(r'name="csrf" value="([^"]+)"', await page.text())
    assert found, "no CSRF field on /login"
    form = {"csrf": found.group(1), "name": name, "password": PASSWORD}
    async with http.post(f"{base}/login", data=form, allow_redirects=False) as resp:
        assert resp.status == 303, await resp.text()
        return resp.cookies["hitl_session"].value


def suspend_body(run_id: str = "inv-1", **over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "run_id": run_id,
        "step": "charge",
        "title": "Charge ACME $42",
        "args": {"amount": 4200},
        "state": {"cursor": 3},
    }
    return body | over
