"""The value coercers: one per type, used by every section, from the file and the environment alike.

Each takes the key's full name (for the error) and the raw value: a TOML value from the file, or
the string of a `HITL_*` variable. A value that does not parse raises `ConfigError` naming the
key; none falls back to a default.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from gateway.core.durations import parse_duration
from gateway.core.errors import ConfigError

Coerce = Callable[[str, Any], Any]  # (the key's full name, the raw value) -> the value, or ConfigError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def string(key: str, v: Any) -> str:
    if isinstance(v, str):
        return v
    raise ConfigError(key, f"expected a string, got {type(v).__name__}")


def integer(key: str, v: Any) -> int:
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            raise ConfigError(key, f"expected an integer, got {v!r}") from None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise ConfigError(key, f"expected an integer, got {type(v).__name__}")


def boolean(key: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE + _FALSE:
        return v.strip().lower() in _TRUE
    raise ConfigError(key, f"expected true or false, got {v!r}")


def duration(key: str, v: Any) -> timedelta:
    try:
        return parse_duration(v)
    except ValueError as exc:
        raise ConfigError(key, str(exc)) from None


def listing(key: str, v: Any) -> list[Any]:
    """A TOML list, or from the environment a TOML list ('["a", "b"]') or 'a,b'."""
    if isinstance(v, str):
        text = v.strip()
        if text.startswith("["):
            try:
                parsed = tomllib.loads(f"v = {text}")["v"]
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError(key, f"not a TOML list: {exc}") from None
            return list(parsed)
        return [p.strip() for p in text.split(",") if p.strip()]
    if isinstance(v, list):
        return v
    raise ConfigError(key, f"expected a list, got {type(v).__name__}")


def strings(key: str, v: Any) -> tuple[str, ...]:
    return tuple(string(f"{key}[{i}]", x) for i, x in enumerate(listing(key, v)))


def ids(key: str, v: Any) -> tuple[str, ...]:
    """A list of ids written as numbers or strings (e.g. chat ids: -100123, "@channel")."""
    out = []
    for i, x in enumerate(listing(key, v)):
        if isinstance(x, bool) or not isinstance(x, str | int):
            raise ConfigError(f"{key}[{i}]", f"expected an id (a number or a string), got {type(x).__name__}")
        out.append(str(x))
    return tuple(out)


def integers(key: str, v: Any) -> tuple[int, ...]:
    return tuple(integer(f"{key}[{i}]", x) for i, x in enumerate(listing(key, v)))


def table(key: str, v: Any) -> dict[str, str]:
    """A TOML table of strings, or from the environment 'name=value,name=value' (each name given
    once: a repeated or empty one is a mistake, not a choice of the last)."""
    if isinstance(v, str):
        pairs = [p.strip().partition("=") for p in v.split(",") if p.strip()]
        out: dict[str, str] = {}
        for name, sep, value in pairs:
            name = name.strip()
            if not sep or not name:
                raise ConfigError(key, "expected 'name=value,name=value'")
            if name in out:
                raise ConfigError(f"{key}.{name}", "given twice")
            out[name] = value.strip()
        return out
    if isinstance(v, dict):
        return {str(name): string(f"{key}.{name}", value) for name, value in v.items()}
    raise ConfigError(key, f"expected a table, got {type(v).__name__}")


def coerce_all(where: str, data: Any, spec: Mapping[str, Coerce]) -> dict[str, Any]:
    """Every key of the table `data` at `where` coerced by its function in `spec`; an unknown key
    or a table that is not one is a ConfigError."""
    if not isinstance(data, dict):
        raise ConfigError(where, "expected a table")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in spec:
            raise ConfigError(f"{where}.{key}", f"unknown key (known: {', '.join(spec)})")
        values[key] = spec[key](f"{where}.{key}", value)
    return values


__all__ = [
    "Coerce",
    "boolean",
    "coerce_all",
    "duration",
    "ids",
    "integer",
    "integers",
    "listing",
    "string",
    "strings",
    "table",
]
