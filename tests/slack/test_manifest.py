"""The app manifest points Slack at our route and asks for the scopes the code uses."""

from __future__ import annotations

import re
from pathlib import Path

from adapters.slack.webhook import PATH

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_matches_the_code() -> None:
    text = (ROOT / "deploy" / "slack-app-manifest.yaml").read_text()
    urls = re.findall(r"request_url:\s*(\S+)", text)
    assert urls and all(u.startswith("https://") and u.endswith(PATH) for u in urls)
    scopes = set(re.findall(r"^\s+- ([a-z.:]+)", text, flags=re.M))
    assert {"chat:write", "channels:history", "groups:history"} <= scopes
    assert re.search(r"interactivity:\s*\n\s+is_enabled: true", text)
    doc = (ROOT / "docs" / "slack.md").read_text()
    assert PATH in doc and "/invite @hitl-gateway" in doc


def test_the_socket_mode_manifest_needs_no_public_url() -> None:
    text = (ROOT / "deploy" / "slack-app-manifest-socket-mode.yaml").read_text()
    assert "request_url" not in text and re.search(r"socket_mode_enabled: true", text)
    assert re.search(r"interactivity:\s*\n\s+is_enabled: true", text)
    http = (ROOT / "deploy" / "slack-app-manifest.yaml").read_text()
    scopes = set(re.findall(r"^\s+- ([a-z.:]+)", text, flags=re.M))
    assert scopes == set(re.findall(r"^\s+- ([a-z.:]+)", http, flags=re.M))  # the same app otherwise
    doc = (ROOT / "docs" / "slack.md").read_text()
    assert "slack-app-manifest-socket-mode.yaml" in doc and "app_token" in doc and "connections:write" in doc
