"""Typed, frozen settings, one module per component, below the code that uses them.

Sources, lowest to highest precedence: built-in defaults, the TOML file (`--config PATH`, else
`HITL_CONFIG`, else `./hitl-gateway.toml` if it exists), then `HITL_<SECTION>_<KEY>` variables.
Every problem is a `ConfigError` naming the key; a value that does not parse never loads as a
default (`gateway.settings.coerce`).

This package imports only `gateway.core`: the channel specs and the environment are given to
`load_settings` by the entry point. `gateway.config` is that entry point's loader, with the
installed channel plugins.
"""

from __future__ import annotations

from gateway.settings.audit import AuditSettings, RedactionSettings, RetentionSettings
from gateway.settings.channels import ChannelConfig, ChannelSchema, attribute, destination_entry
from gateway.settings.coerce import Coerce, boolean, duration, ids, integer, integers, listing, string, strings, table
from gateway.settings.effective import SECRET_KEYS, effective_config
from gateway.settings.load import load_settings, sections
from gateway.settings.mcp import McpGateSettings, McpSettings
from gateway.settings.root import Settings
from gateway.settings.scheduler import SchedulerSettings
from gateway.settings.security import SecuritySettings, agent_policies, agents_table
from gateway.settings.server import ServerSettings, StoreSettings
from gateway.settings.sources import DEFAULT_PATH, NON_CONFIG_VARS, config_path
from gateway.settings.web import WebSettings
from gateway.settings.workers import PYTHON, WorkerSettings

__all__ = [
    "DEFAULT_PATH",
    "NON_CONFIG_VARS",
    "PYTHON",
    "SECRET_KEYS",
    "AuditSettings",
    "ChannelConfig",
    "ChannelSchema",
    "Coerce",
    "McpGateSettings",
    "McpSettings",
    "RedactionSettings",
    "RetentionSettings",
    "SchedulerSettings",
    "SecuritySettings",
    "ServerSettings",
    "Settings",
    "StoreSettings",
    "WebSettings",
    "WorkerSettings",
    "agent_policies",
    "agents_table",
    "attribute",
    "boolean",
    "config_path",
    "destination_entry",
    "duration",
    "effective_config",
    "ids",
    "integer",
    "integers",
    "listing",
    "load_settings",
    "sections",
    "string",
    "strings",
    "table",
]
