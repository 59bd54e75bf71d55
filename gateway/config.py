"""Typed, frozen settings. The only module that reads config files and the environment.

Sources, lowest to highest precedence: built-in defaults, the TOML file (`--config PATH`, else
`HITL_CONFIG`, else `./hitl-gateway.toml` if it exists), then `HITL_<SECTION>_<KEY>` variables.
Every problem is a `ConfigError` naming the key.
"""

from __future__ import annotations

import difflib
import keyword
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gateway.core.audit import load_private_key
from gateway.core.durations import format_duration, parse_duration
from gateway.core.errors import ConfigError, ValidationError
from gateway.core.identity import BUILT_IN, NAMES, WEB, Identities, IdSyntax
from gateway.core.models import Policy
from gateway.core.policy import parse_policy
from gateway.core.policy_bounds import BOUND_KEYS, INLINE_MODES, AgentBounds, parse_bounds
from gateway.core.principals import Principal, Principals, check_principals, principal_entries
from gateway.delivery.channels import destination_entry
from gateway.delivery.registry import installed
from gateway.delivery.spec import ChannelSpec, Coerce

DEFAULT_PATH = "hitl-gateway.toml"


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


@dataclass(frozen=True, slots=True)
class StoreSettings:
    url: str = "sqlite:///./var/hitl-gateway.db"
    # How long a process holds a claimed delivery, due deadline or resume job before another
    # replica may take it over (a running job's lease is renewed every lease/3).
    lease: timedelta = timedelta(seconds=60)


@dataclass(frozen=True, slots=True)
class SecuritySettings:
    secret_keys: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()
    token_grace: timedelta = timedelta(days=7)
    token_max_age: timedelta = timedelta(days=30)
    token_decisions: bool = False
    operator_keys: tuple[str, ...] = ()
    agents: Mapping[str, str] = field(default_factory=dict)  # NAME -> key: the principal agent:NAME
    # NAME -> the named policies agent:NAME may ask for (`policies` in its table); absent: any
    agent_policies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    operators: Mapping[str, str] = field(default_factory=dict)  # NAME -> key: operator:NAME
    inline_policies: str = "restrict"  # restrict | deny | allow (gateway.core.policy_bounds)

    def principal_keys(self) -> list[tuple[Principal, str]]:
        """Every key with its principal (gateway.core.principals.principal_entries)."""
        return principal_entries(self.agents, self.operators, self.api_keys, self.operator_keys)

    def principals(self) -> Principals:
        return Principals(self.principal_keys())

    @property
    def keys(self) -> list[str]:
        """Every bearer key (for the log redactor)."""
        return [k for _, k in self.principal_keys()]


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


@dataclass(frozen=True, slots=True)
class WebSettings:
    """Web inbox users: `approvers` may decide, `viewers` may only look. `passwords` maps a
    user name to its scrypt hash (`hitl-gateway web hash-password`); a user without one signs
    in with a one-time link (`hitl-gateway web login-link NAME`)."""

    approvers: tuple[str, ...] = ()
    viewers: tuple[str, ...] = ()
    passwords: Mapping[str, str] = field(default_factory=dict)
    session_max_age: timedelta = timedelta(hours=12)
    login_link_max_age: timedelta = timedelta(minutes=15)

    def role(self, name: str) -> str | None:
        return "approver" if name in self.approvers else "viewer" if name in self.viewers else None


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """SLA timers: a safety poll in case another process moved a deadline, and the batch size."""

    poll_interval: timedelta = timedelta(seconds=30)
    batch: int = 500


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """The audit trail (docs/audit.md): the Ed25519 key that signs checkpoints (64 hex digits,
    a PEM key, or a file holding one; none: checkpoints are chained but unsigned), and how often
    the heads that moved are sealed into one."""

    signing_key: str = ""
    checkpoint_every: timedelta = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """`raw_after`: how long the sealed raw args and state of a decided approval are kept (None:
    forever). The events, their chain and the redacted view are always kept."""

    raw_after: timedelta | None = None


@dataclass(frozen=True, slots=True)
class RedactionSettings:
    defaults: bool = True  # mail addresses, Luhn-checked card numbers, phone numbers, IBANs, bearer tokens
    patterns: tuple[str, ...] = ()  # extra regular expressions, replaced by [redacted]


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    """One installed channel kind: its spec and its `[<kind>]` section."""

    spec: ChannelSpec
    section: Any

    @property
    def enabled(self) -> bool:
        return bool(self.spec.enabled(self.section))


@dataclass(frozen=True, slots=True)
class McpSettings:
    """`hitl-gateway mcp` (docs/mcp.md): where cards go when a caller names none (Claude Code's
    permission prompt never does)."""

    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    policy: str = ""


@dataclass(frozen=True, slots=True)
class McpGateSettings:
    """`hitl-gateway mcp-gate` (docs/mcp.md): the wrapped MCP server and the tools that need a human."""

    upstream: tuple[str, ...] = ()  # a command and its arguments, or one http(s):// URL
    upstream_headers: Mapping[str, str] = field(default_factory=dict)  # for an HTTP upstream
    require_approval: tuple[str, ...] = ()  # tool-name globs (fnmatch)
    channels: tuple[str, ...] = ()
    approvers: tuple[str, ...] = ()
    policy: str = ""
    wait_seconds: int = 25
    # The key of the MAC that names the gate's approvals and runs (or HITL_MCP_GATE_SECRET):
    # the agent must not be able to derive them, or it could post the gate's approval itself.
    secret: str = ""


@dataclass(frozen=True, slots=True)
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    security: SecuritySettings = field(default_factory=SecuritySettings)
    policies: Mapping[str, Policy] = field(default_factory=lambda: {"default": Policy()})
    workers: Mapping[str, WorkerSettings] = field(default_factory=dict)
    web: WebSettings = field(default_factory=WebSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    redaction: RedactionSettings = field(default_factory=RedactionSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    # Every installed channel kind (besides the web) with its section, whether it is on or not.
    channels: Mapping[str, ChannelConfig] = field(default_factory=dict)
    # `[people.NAME]`: one person's identities across kinds, canonical.
    people: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    identities: Identities = field(default_factory=Identities)
    mcp: McpSettings = field(default_factory=McpSettings)
    mcp_gate: McpGateSettings = field(default_factory=McpGateSettings)
    # What each named policy lets the agent choose (agent_may_set, max_timeout, min_timeout).
    policy_bounds: Mapping[str, AgentBounds] = field(default_factory=dict)

    def channel(self, kind: str) -> Any:
        """The `[<kind>]` section of an installed channel (KeyError for an unknown kind)."""
        return self.channels[kind].section

    def enabled_channels(self) -> frozenset[str]:
        return frozenset({WEB, *(kind for kind, c in self.channels.items() if c.enabled)})


# ---------------------------------------------------------------- value coercion


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
    if isinstance(v, str) and v.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return v.strip().lower() in ("1", "true", "yes", "on")
    raise ConfigError(key, f"expected true or false, got {v!r}")


def duration(key: str, v: Any) -> timedelta:
    try:
        return parse_duration(v)
    except ValueError as exc:
        raise ConfigError(key, str(exc)) from None


def listing(key: str, v: Any) -> list[Any]:
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
    """A TOML table of strings, or from the environment 'name=value,name=value'."""
    if isinstance(v, str):
        pairs = [p.strip().partition("=") for p in v.split(",") if p.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise ConfigError(key, "expected 'name=value,name=value'")
        return {name.strip(): value.strip() for name, _, value in pairs}
    if isinstance(v, dict):
        return {str(name): string(f"{key}.{name}", value) for name, value in v.items()}
    raise ConfigError(key, f"expected a table, got {type(v).__name__}")


def agents_table(key: str, v: Any) -> dict[str, str]:
    """`[security.agents]`: NAME -> its key, from `NAME = "key"` or from a table
    `NAME = { key = "...", policies = [...] }` (the policies: `agent_policies`)."""
    if not isinstance(v, dict):
        return table(key, v)  # also the environment's 'name=key,name=key'
    return {str(name): _agent_key(f"{key}.{name}", entry) for name, entry in v.items()}


def _agent_key(key: str, entry: Any) -> str:
    if not isinstance(entry, dict):
        return string(key, entry)
    for name in entry:
        if name not in ("key", "policies"):
            raise ConfigError(f"{key}.{name}", "unknown key (known: key, policies)")
    if "key" not in entry:
        raise ConfigError(f"{key}.key", "required: the agent's API key")
    return string(f"{key}.key", entry["key"])


def agent_policies(raw: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each agent's `policies` list, for the agents given as tables that name one."""
    section = raw.get("security", {})
    agents = section.get("agents", {}) if isinstance(section, dict) else {}
    if not isinstance(agents, dict):
        return {}
    return {
        str(name): strings(f"security.agents.{name}.policies", entry["policies"])
        for name, entry in agents.items()
        if isinstance(entry, dict) and "policies" in entry
    }


_SPEC: dict[str, dict[str, Coerce]] = {
    "server": {
        "host": string,
        "port": integer,
        "public_url": string,
        "max_body_bytes": integer,
        "shutdown_timeout": duration,
        "log_level": string,
        "header_timeout": duration,
        "body_timeout": duration,
        "keepalive_timeout": duration,
    },
    "store": {"url": string, "lease": duration},
    "security": {
        "secret_keys": strings,
        "api_keys": strings,
        "token_grace": duration,
        "token_max_age": duration,
        "token_decisions": boolean,
        "operator_keys": strings,
        "agents": agents_table,
        "operators": table,
        "inline_policies": string,
    },
    "web": {
        "approvers": strings,
        "viewers": strings,
        "passwords": table,
        "session_max_age": duration,
        "login_link_max_age": duration,
    },
    "scheduler": {"poll_interval": duration, "batch": integer},
    "redaction": {"defaults": boolean, "patterns": strings},
    "audit": {"signing_key": string, "checkpoint_every": duration},
    "retention": {"raw_after": duration},
    "mcp": {"channels": strings, "approvers": strings, "policy": string},
    "mcp_gate": {
        "upstream": strings,
        "upstream_headers": table,
        "require_approval": strings,
        "channels": strings,
        "approvers": strings,
        "policy": string,
        "wait_seconds": integer,
        "secret": string,
    },
}
_POLICY_KEYS = (
    "timeout",
    "on_timeout",
    "escalate_to",
    "escalation_timeout",
    "after_escalation",
    "remind",
    "quorum",
    "extend",
    "max_extensions",
    "require_reason",
    *BOUND_KEYS,
)
_WORKER_SPEC: dict[str, Coerce] = {
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
_POLICY_LISTS = {"escalate_to", "remind", "agent_may_set", "extend"}
SECRET_KEYS = frozenset(
    {
        "secret_keys",
        "api_keys",
        "operator_keys",
        "agents",
        "operators",
        "passwords",
        "secret",
        "upstream_headers",
        "signing_key",
    }
)
_GROUPS = ("policies", "workers", "people")
_SCRYPT_RE = re.compile(r"^scrypt\$\d+\$\d+\$\d+\$[0-9a-f]{16,}\$[0-9a-f]{32,}$")


# ---------------------------------------------------------------- loading


def _read_toml(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError("--config", f"file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--config", f"{path} is not valid TOML: {exc}") from None


# HITL_* variables that are not config keys: read by the CLI, the agent SDK, workers and tests.
NON_CONFIG_VARS = frozenset(
    {
        "HITL_CONFIG",  # the config file's path
        "HITL_API_KEY",  # the agent SDK's and `hitl-gateway mcp`'s bearer key
        "HITL_GATEWAY_URL",  # given to workers: where the gateway is
        "HITL_RESUME_TOKEN",  # given to workers: the run's resume token
        "HITL_APPROVAL_ID",  # given to workers
        "HITL_IDEMPOTENCY_KEY",  # given to workers: the key their effect de-duplicates on
        "HITL_DB_URL",  # the SDK's direct journal
        "HITL_CODE_VERSION",  # the SDK's code version
        "HITL_TEST_POSTGRES_URL",  # the test suite's PostgreSQL server
    }
)


def _env_overrides(
    raw: dict[str, Any], env: Mapping[str, str], sections: Mapping[str, Mapping[str, Coerce]], kinds: Iterable[str]
) -> dict[str, Any]:
    """`raw` with every HITL_<SECTION>_<KEY> applied. A HITL_* variable that is neither a key nor
    one of NON_CONFIG_VARS stops the start: a typo must not pass silently (as in the file)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    used: set[str] = set()
    for section, keys in sections.items():
        for key in keys:
            name = f"HITL_{section}_{key}".upper()
            if name in env:
                out.setdefault(section, {})[key] = env[name]
                used.add(name)
    groups = _env_groups(kinds)
    for group, names in groups:
        prefix = f"HITL_{group.upper()}_"
        table = {k: dict(v) for k, v in out.get(group, {}).items()} if isinstance(out.get(group), dict) else {}
        for name in env:
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix) :]
            for key in sorted(names, key=len, reverse=True):
                suffix = "_" + key.upper()
                if rest.endswith(suffix) and len(rest) > len(suffix):
                    item = rest[: -len(suffix)].lower()
                    table.setdefault(item, {})[key] = env[name]
                    used.add(name)
                    break
        if table:
            out[group] = table
    for name in sorted(env):
        if name.startswith("HITL_") and name not in used and name not in NON_CONFIG_VARS:
            raise ConfigError(name, f"unknown variable{_did_you_mean(name, sections, groups)}")
    return out


def _env_groups(kinds: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The named tables settable from the environment: HITL_<GROUP>_<NAME>_<KEY>."""
    return (("policies", _POLICY_KEYS), ("workers", tuple(_WORKER_SPEC)), ("people", tuple(kinds)))


def _did_you_mean(
    name: str, sections: Mapping[str, Mapping[str, Coerce]], groups: Iterable[tuple[str, tuple[str, ...]]]
) -> str:
    """' (did you mean HITL_SERVER_PORT?)' for the closest known variable, or ''."""
    known = [f"HITL_{section}_{key}".upper() for section, keys in sections.items() for key in keys]
    for group, names in groups:  # HITL_WORKERS_<ITEM>_<KEY>: every split of the rest into item and key
        prefix = f"HITL_{group.upper()}_"
        if name.startswith(prefix):
            parts = name[len(prefix) :].split("_")
            for i in range(1, len(parts)):
                item = "_".join(parts[:i])
                known += [f"{prefix}{item}_{key.upper()}" for key in names]
        else:
            known += [f"{prefix}NAME_{key.upper()}" for key in names]
    known += sorted(NON_CONFIG_VARS)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _section(raw: dict[str, Any], section: str, spec: Mapping[str, Coerce]) -> dict[str, Any]:
    data = raw.get(section, {})
    if not isinstance(data, dict):
        raise ConfigError(section, "expected a table")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in spec:
            raise ConfigError(f"{section}.{key}", f"unknown key (known: {', '.join(spec)})")
        values[key] = spec[key](f"{section}.{key}", value)
    return values


def attribute(key: str) -> str:
    """The attribute of a section that holds `key`: a Python keyword (`from`) gets a trailing
    underscore (`from_`), as PEP 8 has it."""
    return f"{key}_" if keyword.iskeyword(key) else key


def _channels(raw: dict[str, Any], specs: Mapping[str, ChannelSpec], check: bool = True) -> dict[str, ChannelConfig]:
    """Each installed channel's section, built by its spec and checked by it (unless `check` is
    false), and its allowlist checked against the spec's id syntax."""
    out: dict[str, ChannelConfig] = {}
    for kind, spec in specs.items():
        values = {attribute(k): v for k, v in _section(raw, kind, spec.schema).items()}
        config = ChannelConfig(spec, spec.settings(**values))
        if check:
            spec.check(config.section)
        for i, ident in enumerate(spec.approvers(config.section)):
            if spec.identity.canonical(str(ident)) is None:
                raise ConfigError(f"{kind}.approvers[{i}]", f"expected {spec.identity.hint}")
        _check_destinations(kind, spec, config.section)
        out[kind] = config
    return out


def _check_destinations(kind: str, spec: ChannelSpec, section: Any) -> None:
    """Each destination a target of its kind (`NAME:target` for one agent's only)."""
    for key in spec.destinations:
        for i, entry in enumerate(getattr(section, attribute(key))):
            try:
                spec.target(destination_entry(entry)[1])
            except ValueError as exc:
                raise ConfigError(f"{kind}.{key}[{i}]", str(exc)) from None


def _identity_kinds(specs: Mapping[str, ChannelSpec]) -> dict[str, IdSyntax]:
    return {**BUILT_IN, **{kind: spec.identity for kind, spec in specs.items()}}


def _people(raw: dict[str, Any], kinds: Mapping[str, IdSyntax]) -> Identities:
    """`[people.NAME]`: `<kind> = id` (or a list of ids) per identity kind."""
    table = raw.get("people", {})
    if not isinstance(table, dict):
        raise ConfigError("people", "expected a table of people, [people.NAME]")
    bare = Identities(kinds)
    people: dict[str, list[str]] = {}
    for name, body in table.items():
        if not isinstance(body, dict):
            raise ConfigError(f"people.{name}", "expected a table like { web = 'alice', <kind> = '<id>' }")
        ids = people.setdefault(name, [])
        for kind, value in body.items():
            key = f"people.{name}.{kind}"
            if kind not in kinds:
                raise ConfigError(key, f"unknown identity kind (known: {', '.join(sorted(kinds))})")
            for one in value if isinstance(value, list) else listing(key, value) if isinstance(value, str) else [value]:
                if isinstance(one, bool) or not isinstance(one, str | int):
                    raise ConfigError(key, f"expected an id (a string or a number), got {type(one).__name__}")
                try:
                    ids.append(bare.canonical(f"{kind}:{one}", key))
                except ValidationError as exc:
                    raise ConfigError(key, exc.message.split(": ", 1)[-1]) from None
    try:
        return Identities(kinds, people)
    except ValidationError as exc:
        raise ConfigError(exc.field, exc.message.split(": ", 1)[-1]) from None


def _policies(raw: dict[str, Any]) -> tuple[dict[str, Policy], dict[str, AgentBounds]]:
    table = raw.get("policies", {})
    if not isinstance(table, dict):
        raise ConfigError("policies", "expected a table of named policies")
    policies: dict[str, Policy] = {"default": Policy()}
    bounds: dict[str, AgentBounds] = {}
    for name, body in table.items():
        if not isinstance(body, dict):
            raise ConfigError(f"policies.{name}", "expected a table")
        body = dict(body)
        for key in _POLICY_LISTS & body.keys():
            if isinstance(body[key], str):
                body[key] = listing(f"policies.{name}.{key}", body[key])
        for key in ("quorum", "max_extensions"):  # from the environment, numbers are strings
            if isinstance(body.get(key), str):
                body[key] = integer(f"policies.{name}.{key}", body[key])
        if isinstance(body.get("require_reason"), str):
            body["require_reason"] = body["require_reason"].strip().lower() in ("1", "true", "yes", "on")
        try:
            bounds[name] = parse_bounds({k: body.pop(k) for k in BOUND_KEYS if k in body})
            policies[name] = parse_policy(body, name=name)
        except ValidationError as exc:
            raise ConfigError(f"policies.{name}.{exc.field}", exc.message.split(": ", 1)[-1]) from None
    return policies, bounds


def _workers(raw: dict[str, Any]) -> dict[str, WorkerSettings]:
    table = raw.get("workers", {})
    if not isinstance(table, dict):
        raise ConfigError("workers", "expected a table of named workers")
    workers: dict[str, WorkerSettings] = {}
    for name, body in table.items():
        if not isinstance(body, dict):
            raise ConfigError(f"workers.{name}", "expected a table")
        values: dict[str, Any] = {}
        for key, value in body.items():
            if key not in _WORKER_SPEC:
                raise ConfigError(f"workers.{name}.{key}", f"unknown key (known: {', '.join(_WORKER_SPEC)})")
            values[key] = _WORKER_SPEC[key](f"workers.{name}.{key}", value)
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


PYTHON = "{python}"  # in a worker's command: the interpreter running the gateway (its venv's)


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


def _regex(key: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(key, f"not a valid regular expression: {exc}") from None


def _check(settings: Settings) -> None:
    server = settings.server
    if not 0 <= server.port <= 65535:
        raise ConfigError("server.port", f"{server.port} is not a TCP port (0-65535)")
    if urlsplit(server.public_url).scheme not in ("http", "https"):
        raise ConfigError("server.public_url", "must start with http:// or https://")
    if settings.store.lease < timedelta(seconds=1):
        raise ConfigError("store.lease", "must be at least 1s")
    if server.max_body_bytes < 1024:
        raise ConfigError("server.max_body_bytes", "must be at least 1024")
    for key in ("header_timeout", "body_timeout", "keepalive_timeout"):
        if getattr(server, key) < timedelta(milliseconds=100):
            raise ConfigError(f"server.{key}", "must be at least 100ms")
    if server.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError("server.log_level", "expected DEBUG, INFO, WARNING or ERROR")
    if settings.scheduler.batch < 1:
        raise ConfigError("scheduler.batch", "must be at least 1")
    if settings.scheduler.poll_interval.total_seconds() < 0.1:
        raise ConfigError("scheduler.poll_interval", "must be at least 100ms")
    _check_security(settings)
    for i, pattern in enumerate(settings.redaction.patterns):
        _regex(f"redaction.patterns[{i}]", pattern)
    _check_web(settings.web)
    _check_audit(settings)


def _check_audit(settings: Settings) -> None:
    if settings.audit.checkpoint_every < timedelta(seconds=1):
        raise ConfigError("audit.checkpoint_every", "must be at least 1s")
    if settings.audit.signing_key:
        try:
            load_private_key(settings.audit.signing_key)
        except ValueError as exc:
            raise ConfigError("audit.signing_key", str(exc)) from None
    raw_after = settings.retention.raw_after
    if raw_after is not None and raw_after < timedelta(hours=1):
        raise ConfigError("retention.raw_after", "must be at least 1h (a decided run still resumes from it)")


def _check_web(web: WebSettings) -> None:
    seen: dict[str, str] = {}
    for key in ("approvers", "viewers"):
        for i, name in enumerate(getattr(web, key)):
            if NAMES.canonical(name) is None:
                raise ConfigError(f"web.{key}[{i}]", "1-64 characters of A-Z, a-z, 0-9, _ . @ and -")
            # web names are case-insensitive identities (web:alice): two spellings are one user
            folded = name.lower()
            if seen.get(folded, name) != name:
                raise ConfigError(f"web.{key}[{i}]", f"{name!r} and {seen[folded]!r} are the same web user")
            seen[folded] = name
    for name, hashed in web.passwords.items():
        if web.role(name) is None:
            raise ConfigError(f"web.passwords.{name}", "not listed in web.approvers or web.viewers")
        if not _SCRYPT_RE.match(hashed):
            raise ConfigError(f"web.passwords.{name}", "expected a hash from `hitl-gateway web hash-password`")


def _check_security(settings: Settings) -> None:
    sec = settings.security
    scheme = urlsplit(settings.store.url).scheme
    if scheme not in ("sqlite", "postgresql", "postgres"):
        raise ConfigError("store.url", "expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB")
    if not sec.secret_keys:
        raise ConfigError("security.secret_keys", "must list at least one key (newest last)")
    for i, key in enumerate(sec.secret_keys):
        if len(key) < 16:
            raise ConfigError(f"security.secret_keys[{i}]", "must be at least 16 characters")
    check_principals(sec.agents, sec.operators, sec.api_keys, sec.operator_keys)
    if sec.inline_policies not in INLINE_MODES:
        raise ConfigError("security.inline_policies", f"expected one of {', '.join(INLINE_MODES)}")
    _check_agent_policies(settings)
    _check_channels(settings)


def _check_agent_policies(settings: Settings) -> None:
    """Every policy an agent's `policies` names is configured (a typo would lock the agent out)."""
    for name, names in settings.security.agent_policies.items():
        for i, policy in enumerate(names):
            if policy not in settings.policies:
                known = ", ".join(sorted(settings.policies))
                where = f"security.agents.{name}.policies[{i}]"
                raise ConfigError(where, f"unknown policy {policy!r} (known: {known})")


def _check_channels(settings: Settings) -> None:
    for name, policy in settings.policies.items():
        for target in policy.escalate_to:
            if target.split(":", 1)[0] not in settings.enabled_channels():
                raise ConfigError(f"policies.{name}.escalate_to", f"channel {target!r} is not enabled")


def sections(specs: Mapping[str, ChannelSpec] | None = None) -> dict[str, Mapping[str, Coerce]]:
    """Every plain section and its keys: the core's, then each installed channel's."""
    specs = installed() if specs is None else specs
    return {**_SPEC, **{kind: spec.schema for kind, spec in specs.items()}}


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
    """Build Settings from defaults < file < env < overrides (command-line options). Raises
    ConfigError naming the bad key.
    `specs`: the channel kinds to know (default: every installed one, `registry.installed()`).

    `validate=False` skips the gateway's own checks (secret keys, store URL, channels): for the
    agent-side commands (`mcp`, `mcp-gate`), which only read `[server]`, `[mcp]` and `[mcp_gate]`
    and run where the gateway's secrets are not."""
    env = os.environ if env is None else env
    specs = installed() if specs is None else specs
    known = sections(specs)
    kinds = _identity_kinds(specs)
    raw = _read_toml(config_path(path, env))
    for section in raw:
        if section not in known and section not in _GROUPS:
            raise ConfigError(section, "unknown section")
    for section, values in (defaults or {}).items():
        given = raw.get(section, {})
        if isinstance(given, dict):
            raw[section] = {**values, **given}
    for group, table in (tables or {}).items():  # named policies/workers given in code
        raw.setdefault(group, {}).update(table)
    raw = _env_overrides(raw, env, known, kinds)
    for section, values in (overrides or {}).items():
        raw[section] = {**raw.get(section, {}), **values}
    server = _section(raw, "server", _SPEC["server"])
    server.setdefault("public_url", _own_url(server.get("host", "127.0.0.1"), server.get("port", 8080)))
    identities = _people(raw, kinds)
    policies, bounds = _policies(raw)
    settings = Settings(
        server=ServerSettings(**server),
        store=StoreSettings(**_section(raw, "store", _SPEC["store"])),
        security=SecuritySettings(**_section(raw, "security", _SPEC["security"]), agent_policies=agent_policies(raw)),
        policies=policies,
        policy_bounds=bounds,
        workers=_workers(raw),
        web=WebSettings(**_section(raw, "web", _SPEC["web"])),
        scheduler=SchedulerSettings(**_section(raw, "scheduler", _SPEC["scheduler"])),
        redaction=RedactionSettings(**_section(raw, "redaction", _SPEC["redaction"])),
        audit=AuditSettings(**_section(raw, "audit", _SPEC["audit"])),
        retention=RetentionSettings(**_section(raw, "retention", _SPEC["retention"])),
        mcp=McpSettings(**_section(raw, "mcp", _SPEC["mcp"])),
        mcp_gate=McpGateSettings(**_section(raw, "mcp_gate", _SPEC["mcp_gate"])),
        channels=_channels(raw, specs, check=validate),
        people=identities.people,
        identities=identities,
    )
    if validate:
        _check(settings)
    return settings


def config_path(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    """The file to read: `--config PATH`, else $HITL_CONFIG, else ./hitl-gateway.toml if it exists."""
    if path is None and env.get("HITL_CONFIG"):
        path = env["HITL_CONFIG"]
    if path is None and env is os.environ and Path(DEFAULT_PATH).exists():
        path = DEFAULT_PATH
    return Path(path) if path is not None else None


def _own_url(host: str, port: int) -> str:
    """`server.public_url` when none is configured: the address the gateway listens on, so that
    `serve --port 19080` prints links and gives workers a URL for that port. A wildcard host is
    reached on loopback here; behind a proxy or on another host, set public_url."""
    host = "127.0.0.1" if host in ("", "0.0.0.0") else "[::1]" if host == "::" else host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _mask(key: str, value: Any, secrets: frozenset[str] = SECRET_KEYS) -> Any:
    if key not in secrets:
        return value
    if isinstance(value, list | tuple):
        return [f"***({len(v)} chars)" for v in value]
    if isinstance(value, Mapping):
        return {k: "***" for k in value}
    return f"***({len(value)} chars)" if value else ""


def _plain(value: Any) -> Any:
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def effective_config(settings: Settings) -> dict[str, Any]:
    """The settings as plain data with secrets masked (for `check-config`)."""
    out: dict[str, Any] = {}
    for section in _SPEC:
        obj = getattr(settings, section)
        out[section] = {k: _mask(k, _plain(getattr(obj, k))) for k in _SPEC[section]}
    out["security"]["agent_policies"] = {n: list(p) for n, p in settings.security.agent_policies.items()}
    for kind, channel in settings.channels.items():
        secrets = channel.spec.secrets
        section = channel.section
        out[kind] = {k: _mask(k, _plain(getattr(section, attribute(k))), secrets) for k in channel.spec.schema}
    out["people"] = {n: list(ids) for n, ids in settings.people.items()}
    out["policies"] = {
        n: p.to_json() | (settings.policy_bounds[n].to_json() if n in settings.policy_bounds else {})
        for n, p in settings.policies.items()
    }
    out["workers"] = {
        n: {k: _mask(k, _plain(getattr(w, k))) for k in _WORKER_SPEC if getattr(w, k)}
        for n, w in settings.workers.items()
    }
    return out
