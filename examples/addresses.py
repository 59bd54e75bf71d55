"""Where the examples find the gateway and the fake payment API: the one place for both.

- The gateway: `$HITL_GATEWAY_URL` (what the gateway gives its workers), else
  `$HITL_SERVER_PUBLIC_URL`, else `$HITL_SERVER_HOST` and `$HITL_SERVER_PORT`, the variables the
  gateway itself listens on (default 127.0.0.1:8080). So an agent started in the shell that
  started the gateway (`HITL_SERVER_PORT=9090 make run`) finds it without `--gateway`.
- The fake payment API (examples/invoice_agent/payments.py): `$HITL_PAYMENTS_URL`, default
  http://127.0.0.1:8099. The payment API listens on its port, and the agents and their workers
  charge there; a worker inherits the gateway's environment, so set it where the gateway starts.

Standard library only: the framework examples run where only the agent SDK is installed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["DEFAULT_PAYMENTS_URL", "PAYMENTS_URL_VAR", "gateway_url", "payments_port", "payments_url"]

PAYMENTS_URL_VAR = "HITL_PAYMENTS_URL"
DEFAULT_PAYMENTS_URL = "http://127.0.0.1:8099"


def payments_url(env: Mapping[str, str] = os.environ) -> str:
    """The fake payment API's base URL, without a trailing slash."""
    return (env.get(PAYMENTS_URL_VAR) or DEFAULT_PAYMENTS_URL).rstrip("/")


def payments_port(env: Mapping[str, str] = os.environ) -> int:
    """The port the fake payment API listens on: that of `payments_url`."""
    parts = urlsplit(payments_url(env))
    return parts.port or (443 if parts.scheme == "https" else 80)


def gateway_url(env: Mapping[str, str] = os.environ) -> str:
    """The gateway's base URL, as the gateway's own settings give it (see the module's doc)."""
    if env.get("HITL_GATEWAY_URL"):
        return env["HITL_GATEWAY_URL"].rstrip("/")
    if env.get("HITL_SERVER_PUBLIC_URL"):
        return env["HITL_SERVER_PUBLIC_URL"].rstrip("/")
    host = env.get("HITL_SERVER_HOST") or "127.0.0.1"
    host = "127.0.0.1" if host == "0.0.0.0" else "[::1]" if host == "::" else host  # a wildcard: loopback
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{env.get('HITL_SERVER_PORT') or 8080}"
