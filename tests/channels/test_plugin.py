"""A third-party channel is picked up through the entry-point group `hitl_gateway.channels`,
without touching the core: config section, CLI command, cards through the outbox, presses
through the press use case, identities of its own kind. Against a real `hitl-gateway serve`."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from gateway.core.errors import ConfigError
from gateway.delivery.registry import GROUP, discover
from tests.procs import AUTH, Gateway, free_port, wait_ready, write_config

PLUGIN = Path(__file__).resolve().parents[1] / "fakes" / "echo_channel"


def install_plugin(site: Path, target: str = "echo_channel:SPEC", name: str = "echo") -> Path:
    """What `pip install` of a package declaring the entry point leaves: the module and a dist-info."""
    site.mkdir(parents=True, exist_ok=True)
    shutil.copytree(PLUGIN, site / "echo_channel", dirs_exist_ok=True)
    info = site / "hitl_echo_channel-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hitl-echo-channel\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{name} = {target}\n")
    return site


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    path = install_plugin(tmp_path / "site")
    sys.path.insert(0, str(path))
    importlib.invalidate_caches()
    yield path
    sys.path.remove(str(path))
    sys.modules.pop("echo_channel", None)
    importlib.invalidate_caches()


def test_the_registry_finds_an_entry_point_and_refuses_a_clash(site: Path, tmp_path: Path) -> None:
    specs = discover()
    assert specs["echo"].kind == "echo" and {"email", "slack", "telegram"} <= set(specs)
    bad = install_plugin(tmp_path / "bad", name="telegram")  # a second "telegram"
    sys.path.insert(0, str(bad))
    importlib.invalidate_caches()
    try:
        with pytest.raises(ConfigError, match="entry point 'telegram'"):
            discover()
    finally:
        sys.path.remove(str(bad))
        importlib.invalidate_caches()


def _env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


@pytest.mark.subprocess
async def test_a_plugin_channel_serves_cards_presses_and_commands(tmp_path: Path) -> None:
    site = install_plugin(tmp_path / "site")
    cards = tmp_path / "cards.jsonl"
    port = free_port()
    extra = f'[echo]\npath = "{cards}"\napprovers = ["ann"]\nrooms = ["room1"]\n'
    config = write_config(tmp_path / "gw.toml", f"sqlite:///{tmp_path / 'gw.db'}", port, extra)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "gateway", "--config", str(config), "echo", "ping", "--who", "tests"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("HITL_")} | _env(site),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0 and out.decode().strip() == "pong from tests via cards.jsonl", err.decode()
    gw = Gateway(config, port, tmp_path / "gw.log", _env(site)).start()
    try:
        async with aiohttp.ClientSession() as http:
            await wait_ready(http, gw.url, lambda: gw.proc is not None and gw.proc.poll() is None, log=gw.log)
            body = {"run_id": "r", "step": "s", "title": "T", "channels": ["echo:room1"], "requested_by": "echo:bob"}
            async with http.post(f"{gw.url}/v1/suspend", json=body, headers=AUTH) as resp:
                assert resp.status == 201, await resp.text()
                approval_id = (await resp.json())["id"]
            again = {**body, "step": "x", "requested_by": "echo:Bob"}  # not the echo id syntax
            async with http.post(f"{gw.url}/v1/suspend", json=again, headers=AUTH) as resp:
                assert resp.status == 400 and (await resp.json())["error"]["details"]["field"] == "requested_by"
            press = {"approval_id": approval_id, "outcome": "approve", "room": "room1"}
            async with http.post(f"{gw.url}/webhooks/echo", json={**press, "user": "eve"}) as resp:
                assert (await resp.json())["result"] == "denied"  # not on echo.approvers
            async with http.post(f"{gw.url}/webhooks/echo", json={**press, "user": "ann"}) as resp:
                assert (await resp.json()) == {"result": "approved", "text": "Approved"}
            for _ in range(200):  # the gateway's outbox delivers in the background
                lines = [json.loads(x) for x in cards.read_text().splitlines()] if cards.exists() else []
                if [x["op"] for x in lines] == ["post", "update"]:
                    break
                await asyncio.sleep(0.05)
            assert [(x["op"], x["target"], x["status"]) for x in lines] == [
                ("post", "room1", "waiting_approval"),
                ("update", "room1", "approved"),
            ]
            async with http.get(f"{gw.url}/v1/approvals/{approval_id}", headers=AUTH) as resp:
                view = await resp.json()
            assert view["decision"]["decided_by"] == "echo:ann" and view["cards"][0]["ref"] == "room1:1"
    finally:
        gw.stop()
