"""Start npm's oidc-provider (tests/web/oidc/provider.mjs) and sign in through it with an
HTTP client: the provider's own login and consent pages, posted as a browser would."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from html import unescape
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import aiohttp
import pytest

HERE = Path(__file__).parent
CLIENT_ID, CLIENT_SECRET = "hitl-gateway", "test-client-secret-0123456789"
_FORM = re.compile(r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', re.S)
_HIDDEN = re.compile(r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', re.S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the OpenID provider cannot run: {reason}")
    pytest.skip(f"the OpenID provider cannot run: {reason}")


def install() -> None:
    """`npm ci` once (make test does it too), or skip with the reason (fail under CI=true)."""
    if (HERE / "node_modules" / "oidc-provider").is_dir():
        return
    if shutil.which("node") is None or shutil.which("npm") is None:
        _unavailable("node or npm is not installed")
    with (HERE / ".npm-ci.lock").open("w") as lock:  # two test workers: one installs, the other waits
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (HERE / "node_modules" / "oidc-provider").is_dir():
            return
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--silent"], cwd=HERE, capture_output=True, text=True, timeout=300
        )
    if done.returncode != 0:
        _unavailable(f"npm ci failed (is the registry reachable?): {done.stderr.strip()[-300:]}")


@asynccontextmanager
async def provider(redirect_uri: str, accounts: Path) -> AsyncIterator[str]:
    """The provider running, as its issuer URL; `accounts` is a JSON file of each login's
    claims, read at each sign-in."""
    install()
    config = {
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uri": redirect_uri,
        "accounts": str(accounts),
    }
    proc = await asyncio.create_subprocess_exec(
        "node", str(HERE / "provider.mjs"), json.dumps(config), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("listening "), f"the provider did not start: {line!r}"
        yield line.split()[1]
    finally:
        proc.terminate()
        await proc.wait()


async def sign_in(http: aiohttp.ClientSession, gateway: str, login: str) -> aiohttp.ClientResponse:
    """From the gateway's SSO button to the page the gateway lands on: the provider's login
    form (any password: devInteractions) and its consent form, posted in turn."""
    resp = await http.get(f"{gateway}/login/oidc")
    for _ in range(4):
        if not urlsplit(str(resp.url)).path.startswith("/interaction/"):
            return resp
        html = await resp.text()
        found = _FORM.search(html)
        assert found, f"no form on the provider's page: {html[:300]}"
        action, body = unescape(found.group(1)), found.group(2)
        data = {name: unescape(value) for name, value in _HIDDEN.findall(body)}
        if 'name="login"' in body:
            data |= {"login": login, "password": "any"}
        resp = await http.post(urljoin(str(resp.url), action), data=data)
    raise AssertionError("the provider kept asking")
