"""`[calendars.NAME]`: business-hours calendars that a policy names with `calendar = "NAME"`.

The core's `parse_calendar` checks a table; an error here names the key in the file
(`calendars.NAME.hours`). From the environment, `holidays` is a comma-separated list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.calendar import Calendar, parse_calendar
from gateway.core.errors import ConfigError, ValidationError
from gateway.settings.coerce import Coerce, listing, string

KEYS: dict[str, Coerce] = {"timezone": string, "hours": string, "holidays": listing}
NAMES = tuple(KEYS)


def load_calendars(raw: Mapping[str, Any]) -> dict[str, Calendar]:
    """Every `[calendars.NAME]` table, checked: a ConfigError names the bad key."""
    group = raw.get("calendars", {})
    if not isinstance(group, dict):
        raise ConfigError("calendars", "expected a table of named calendars")
    out: dict[str, Calendar] = {}
    for name, body in group.items():
        if not isinstance(body, dict):
            raise ConfigError(f"calendars.{name}", "expected a table with timezone, hours and holidays")
        if "name" in body:
            raise ConfigError(f"calendars.{name}.name", "a calendar is named by its table, [calendars.NAME]")
        body = {k: _coerce(f"calendars.{name}.{k}", k, v) for k, v in body.items()}
        try:
            out[name] = parse_calendar(name, body)
        except ValidationError as exc:
            raise ConfigError(f"calendars.{name}.{exc.field}", exc.message.split(": ", 1)[-1]) from None
    return out


def _coerce(key: str, name: str, value: Any) -> Any:
    return KEYS[name](key, value) if name in KEYS else value  # an unknown key: the core names it


__all__ = ["KEYS", "NAMES", "load_calendars"]
