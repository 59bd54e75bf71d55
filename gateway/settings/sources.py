"""Where settings come from: the TOML file and the `HITL_<SECTION>_<KEY>` variables.

Only the entry point passes the environment in; nothing else here reads it.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gateway.core.errors import ConfigError

DEFAULT_PATH = "hitl-gateway.toml"
Groups = tuple[tuple[str, tuple[str, ...]], ...]  # (group, its keys): HITL_<GROUP>_<NAME>_<KEY>

# HITL_* variables that are not config keys: read by the CLI, the agent SDK, workers and tests.
NON_CONFIG_VARS = frozenset(
    {
        "HITL_CONFIG",  # the config file's path
        "HITL_URL",  # the CLI's --url: a gateway to operate over HTTP
        "HITL_OPERATOR_KEY",  # the CLI's --operator-key for HITL_URL
        "HITL_API_KEY",  # the agent SDK's and `hitl-gateway mcp`'s bearer key
        "HITL_GATEWAY_URL",  # given to workers: where the gateway is
        "HITL_RESUME_TOKEN",  # given to workers: the run's resume token
        "HITL_APPROVAL_ID",  # given to workers
        "HITL_IDEMPOTENCY_KEY",  # given to workers: the key their effect de-duplicates on
        "HITL_DB_URL",  # the SDK's direct journal
        "HITL_CODE_VERSION",  # the SDK's code version
        "HITL_TEST_POSTGRES_URL",  # the test suite's PostgreSQL server
        "HITL_PAYMENTS_URL",  # the examples' fake payment API (examples/addresses.py); workers inherit it
    }
)


def config_path(path: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    """The file to read: `--config PATH`, else $HITL_CONFIG, else ./hitl-gateway.toml if it exists."""
    if path is None and env.get("HITL_CONFIG"):
        path = env["HITL_CONFIG"]
    if path is None and env is os.environ and Path(DEFAULT_PATH).exists():
        path = DEFAULT_PATH
    return Path(path) if path is not None else None


def read_toml(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError("--config", f"file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--config", f"{path} is not valid TOML: {exc}") from None


def env_overrides(
    raw: dict[str, Any], env: Mapping[str, str], sections: Mapping[str, Iterable[str]], groups: Groups
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
    for group, names in groups:
        _env_group(out, env, group, names, used)
    for name in sorted(env):
        if name.startswith("HITL_") and name not in used and name not in NON_CONFIG_VARS:
            raise ConfigError(name, f"unknown variable{_did_you_mean(name, sections, groups)}")
    return out


def _env_group(out: dict[str, Any], env: Mapping[str, str], group: str, names: tuple[str, ...], used: set[str]) -> None:
    """HITL_<GROUP>_<NAME>_<KEY> into the table `out[group]`, each variable used added to `used`."""
    if group in out and not isinstance(out[group], dict):
        raise ConfigError(group, "expected a table")  # not replaced by the variables' table
    prefix = f"HITL_{group.upper()}_"
    table = {k: dict(v) if isinstance(v, dict) else v for k, v in out.get(group, {}).items()}
    for name in env:
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :]
        for key in sorted(names, key=len, reverse=True):
            suffix = "_" + key.upper()
            if rest.endswith(suffix) and len(rest) > len(suffix):
                item = rest[: -len(suffix)].lower()
                entry = table.setdefault(item, {})
                if not isinstance(entry, dict):
                    raise ConfigError(f"{group}.{item}", "expected a table")
                entry[key] = env[name]
                used.add(name)
                break
    if table:
        out[group] = table


def _did_you_mean(name: str, sections: Mapping[str, Iterable[str]], groups: Groups) -> str:
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


__all__ = ["DEFAULT_PATH", "NON_CONFIG_VARS", "Groups", "config_path", "env_overrides", "read_toml"]
