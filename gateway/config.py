"""The entry point's settings loader: `gateway.settings` with the installed channel plugins and
the process environment.

`gateway.settings` sits below every component and is given the channel specs; this module gives
it the installed ones (`gateway.delivery.registry`), so only the entry points (the CLI, the MCP
commands, `gateway.testing`) import it. Components import `gateway.settings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from gateway import settings as _settings
from gateway.delivery.registry import installed
from gateway.delivery.spec import ChannelSpec
from gateway.settings import NON_CONFIG_VARS, Coerce, Settings, config_path, effective_config
from gateway.settings.coerce import (  # plugins' coercers
    boolean,
    duration,
    ids,
    integer,
    integers,
    string,
    strings,
    table,
)


def load_settings(
    path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    defaults: Mapping[str, Mapping[str, Any]] | None = None,
    tables: Mapping[str, Mapping[str, Any]] | None = None,
    specs: Mapping[str, ChannelSpec] | None = None,
    validate: bool = True,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Settings:
    """`gateway.settings.load_settings` with `env` (default: the process environment) and `specs`
    (default: every installed channel, `registry.installed()`)."""
    return _settings.load_settings(
        path,
        os.environ if env is None else env,
        specs=installed() if specs is None else specs,
        defaults=defaults,
        tables=tables,
        validate=validate,
        overrides=overrides,
    )


def sections(specs: Mapping[str, ChannelSpec] | None = None) -> dict[str, Mapping[str, Coerce]]:
    """Every plain section and its keys: the core's, then each installed channel's."""
    return _settings.sections(installed() if specs is None else specs)


__all__ = [
    "NON_CONFIG_VARS",
    "Settings",
    "boolean",
    "config_path",
    "duration",
    "effective_config",
    "ids",
    "integer",
    "integers",
    "load_settings",
    "sections",
    "string",
    "strings",
    "table",
]
