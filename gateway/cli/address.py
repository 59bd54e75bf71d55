"""Where a running `serve` is reached, for the commands that print links to it (`web login-link`).

A link uses `server.public_url` when the config sets one. Without it, the address is the one the
gateway serves at, which `serve --port P` (or `--host`) may have moved away from the config's:
`serve` records the base URL of the socket it bound in
`$XDG_STATE_HOME/hitl-gateway/serving/<store>/<pid>` (default `~/.local/state/...`), where
`<store>` is a hash of the store's URL (a SQLite path made absolute), never the URL itself, which
may hold a password. The file goes when the gateway stops. A command on the same store, on this
machine and as the same user, links to the newest of these whose process is still alive; with none
alive, to the config's host and port.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from gateway.settings import Settings
from gateway.settings.server import own_url


def _store_key(url: str) -> str:
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        url = "sqlite:///" + os.path.realpath(url[len("sqlite:///") :])
    return hashlib.sha256(b"hitl-gateway store\x00" + url.encode()).hexdigest()[:16]


def serving_dir(settings: Settings, env: Mapping[str, str]) -> Path | None:
    """The directory of the records for this config's store; None without a state dir or home."""
    home = env.get("HOME")
    base = env.get("XDG_STATE_HOME") or (str(Path(home) / ".local" / "state") if home else "")
    return Path(base) / "hitl-gateway" / "serving" / _store_key(settings.store.url) if base else None


def _configured(settings: Settings) -> bool:
    """Whether `server.public_url` was set, rather than derived from host and port by the loader."""
    return settings.server.public_url != own_url(settings.server.host, settings.server.port)


def served_url(settings: Settings, port: int) -> str:
    """The base URL of a gateway with these settings bound to `port`."""
    return settings.server.public_url if _configured(settings) else own_url(settings.server.host, port)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    except OverflowError:
        return False
    return True


def _records(directory: Path) -> list[tuple[float, int, Path]]:
    """(mtime, pid, path) of the records in `directory` whose process is alive; the dead ones are removed."""
    found: list[tuple[float, int, Path]] = []
    with contextlib.suppress(OSError):
        for path in directory.iterdir():
            if not path.name.isdigit():
                continue
            if not _alive(int(path.name)):
                path.unlink(missing_ok=True)
                continue
            with contextlib.suppress(OSError):
                found.append((path.stat().st_mtime, int(path.name), path))
    return sorted(found)


def record(settings: Settings, port: int, env: Mapping[str, str]) -> Path | None:
    """`serve`: write where this process serves. Never fatal: without a writable state dir the
    commands fall back to the config's public_url."""
    directory = serving_dir(settings, env)
    if directory is None or _configured(settings):  # a configured public_url is what every link says
        return None
    path = directory / str(os.getpid())
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        _records(directory)  # prunes the records of gateways that died without removing theirs
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(served_url(settings, port) + "\n")
        os.replace(tmp, path)
    except OSError:
        return None
    return path


def forget(path: Path | None) -> None:
    """`serve` stopping: its record goes, and the store's directory with it when no other is there."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
            path.parent.rmdir()  # OSError while another gateway's record is in it


def running_url(settings: Settings, env: Mapping[str, str]) -> str:
    """The base URL to link to: `server.public_url` when the config sets it; else the newest live
    gateway's on this store; else the config's host and port."""
    directory = serving_dir(settings, env)
    if _configured(settings) or directory is None:
        return settings.server.public_url
    for _, _, path in reversed(_records(directory)):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            url = path.read_text().strip()
            if url.startswith(("http://", "https://")):
                return url
    return settings.server.public_url


def at(settings: Settings, url: str) -> Settings:
    """The same settings, with `url` as the public URL."""
    return dataclasses.replace(settings, server=dataclasses.replace(settings.server, public_url=url))
