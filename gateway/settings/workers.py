"""`[workers.NAME]`: what resumes a decided run (a command, a Python entrypoint, or a URL)."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from gateway.core.errors import ConfigError
from gateway.settings.coerce import Coerce, coerce_all, duration, integer, string, strings


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    name: str
    command: tuple[str, ...] = ()
    entrypoint: str = ""
    url: str = ""
    timeout: timedelta = timedelta(minutes=5)
    max_attempts: int = 5
    allowed_hosts: tuple[str, ...] = ()  # url workers: the SSRF guard (the url's host must be listed)
    secret: str = ""  # url workers: HMAC key for X-HITL-Signature (default: the newest security.secret_keys)
    pool_size: int = 2  # entrypoint workers: long-lived processes in the pool
    retry_base: timedelta = timedelta(seconds=5)  # first backoff delay (doubles, with jitter)
    accepts: tuple[str, ...] = ()  # code_version globs it resumes (fnmatch); empty: any version

    @property
    def kind(self) -> str:
        return "command" if self.command else "entrypoint" if self.entrypoint else "url"


KEYS: dict[str, Coerce] = {
    "command": strings,
    "entrypoint": string,
    "url": string,
    "timeout": duration,
    "max_attempts": integer,
    "allowed_hosts": strings,
    "secret": string,
    "pool_size": integer,
    "retry_base": duration,
    "accepts": strings,
}
PYTHON = "{python}"  # in a worker's command: the interpreter running the gateway (its venv's)


def load_workers(raw: Mapping[str, Any]) -> dict[str, WorkerSettings]:
    group = raw.get("workers", {})
    if not isinstance(group, dict):
        raise ConfigError("workers", "expected a table of named workers")
    workers: dict[str, WorkerSettings] = {}
    for name, body in group.items():
        values = coerce_all(f"workers.{name}", body, KEYS)
        kinds = [k for k in ("command", "entrypoint", "url") if values.get(k)]
        if len(kinds) != 1:
            raise ConfigError(f"workers.{name}", "set exactly one of command, entrypoint or url")
        if values.get("max_attempts", 1) < 1:
            raise ConfigError(f"workers.{name}.max_attempts", "must be at least 1")
        if "entrypoint" in values and not re.fullmatch(r"[\w.]+:[\w.]+", values["entrypoint"]):
            raise ConfigError(f"workers.{name}.entrypoint", "expected 'package.module:function'")
        if values.get("command"):
            values["command"] = _command(f"workers.{name}.command", values["command"])
        _check_worker(name, values)
        workers[name] = WorkerSettings(name=name, **values)
    return workers


def _command(key: str, argv: tuple[str, ...]) -> tuple[str, ...]:
    """`{python}` becomes the gateway's own interpreter, so a worker command does not depend on
    which `python` is first on the PATH; the executable must exist, checked at start-up."""
    argv = tuple(sys.executable if a == PYTHON else a for a in argv)
    if shutil.which(argv[0]) is None:
        hint = ' (for the gateway\'s own interpreter write "{python}")' if "python" in argv[0] else ""
        raise ConfigError(key, f"{argv[0]!r} is not an executable file or on the PATH{hint}")
    return argv


def _check_worker(name: str, values: dict[str, Any]) -> None:
    if values.get("pool_size", 1) < 1:
        raise ConfigError(f"workers.{name}.pool_size", "must be at least 1")
    if not values.get("url"):
        return
    parts = urlsplit(values["url"])
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"workers.{name}.url", "must be an http:// or https:// URL with a host")
    if parts.hostname.lower() not in {h.lower() for h in values.get("allowed_hosts", ())}:
        raise ConfigError(f"workers.{name}.allowed_hosts", f"must list the url's host {parts.hostname!r} (SSRF guard)")


__all__ = ["KEYS", "PYTHON", "WorkerSettings", "load_workers"]
