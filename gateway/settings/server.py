"""`[server]` (the HTTP transport) and `[store]` (where the state lives)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, duration, integer, string, strings


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    public_url: str = "http://127.0.0.1:8080"
    max_body_bytes: int = 1024 * 1024
    shutdown_timeout: timedelta = timedelta(seconds=10)
    log_level: str = "INFO"
    # A connection must send a complete request head this soon after it opens (or after the
    # first byte of a later request on it), and a body within body_timeout (slowloris).
    header_timeout: timedelta = timedelta(seconds=10)
    body_timeout: timedelta = timedelta(seconds=30)
    # An idle keep-alive connection is closed after this; longer than a load balancer's idle
    # timeout (60 s on most), so that the balancer never sends on a connection being closed.
    keepalive_timeout: timedelta = timedelta(seconds=75)
    # The reverse proxies in front (addresses or networks): a request from one of them is from
    # the address its X-Forwarded-For names (what is counted per client, failed sign-ins).
    trusted_proxies: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StoreSettings:
    url: str = "sqlite:///./var/hitl-gateway.db"
    # How long a process holds a claimed delivery, due deadline or resume job before another
    # replica may take it over (a running job's lease is renewed every lease/3).
    lease: timedelta = timedelta(seconds=60)


SERVER_KEYS: dict[str, Coerce] = {
    "host": string,
    "port": integer,
    "public_url": string,
    "max_body_bytes": integer,
    "shutdown_timeout": duration,
    "log_level": string,
    "header_timeout": duration,
    "body_timeout": duration,
    "keepalive_timeout": duration,
    "trusted_proxies": strings,
}
STORE_KEYS: dict[str, Coerce] = {"url": string, "lease": duration}


def own_url(host: str, port: int) -> str:
    """`server.public_url` when none is configured: the address the gateway listens on, so that
    `serve --port 19080` prints links and gives workers a URL for that port. A wildcard host is
    reached on loopback here; behind a proxy or on another host, set public_url."""
    host = "127.0.0.1" if host in ("", "0.0.0.0") else "[::1]" if host == "::" else host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def check_server(server: ServerSettings) -> None:
    if not 0 <= server.port <= 65535:
        raise ConfigError("server.port", f"{server.port} is not a TCP port (0-65535)")
    if urlsplit(server.public_url).scheme not in ("http", "https"):
        raise ConfigError("server.public_url", "must start with http:// or https://")
    if server.max_body_bytes < 1024:
        raise ConfigError("server.max_body_bytes", "must be at least 1024")
    for key in ("header_timeout", "body_timeout", "keepalive_timeout"):
        if getattr(server, key) < timedelta(milliseconds=100):
            raise ConfigError(f"server.{key}", "must be at least 100ms")
    if server.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError("server.log_level", "expected DEBUG, INFO, WARNING or ERROR")
    for i, proxy in enumerate(server.trusted_proxies):
        try:
            ipaddress.ip_network(proxy.strip(), strict=False)
        except ValueError:
            raise ConfigError(f"server.trusted_proxies[{i}]", f"{proxy!r} is not an address or a network") from None


def check_store(store: StoreSettings) -> None:
    if store.lease < timedelta(seconds=1):
        raise ConfigError("store.lease", "must be at least 1s")
    if urlsplit(store.url).scheme not in ("sqlite", "postgresql", "postgres"):
        raise ConfigError("store.url", "expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB")


__all__ = ["SERVER_KEYS", "STORE_KEYS", "ServerSettings", "StoreSettings", "check_server", "check_store", "own_url"]
