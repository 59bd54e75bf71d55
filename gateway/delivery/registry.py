"""The one registry of channel kinds: the built-in adapters, then third-party plugins.

Built-in adapters are the packages under `adapters/` that export a `SPEC`, found by name (the
package's name is the kind). A third-party package registers its spec under the entry-point group
`hitl_gateway.channels` (the entry point's name is the kind), for example in its pyproject.toml:

    [project.entry-points."hitl_gateway.channels"]
    sms = "my_sms_channel:SPEC"

Nothing here names a kind: the core knows channels only through their specs.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import pkgutil
from collections.abc import Mapping

from gateway.core.errors import ConfigError
from gateway.core.identity import BUILT_IN, KIND_RE
from gateway.delivery.spec import ChannelSpec

GROUP = "hitl_gateway.channels"
BUILT_IN_PACKAGE = "adapters"


def _add(found: dict[str, ChannelSpec], spec: object, origin: str) -> None:
    if not isinstance(spec, ChannelSpec):
        raise ConfigError("channels", f"{origin} is not a ChannelSpec (got {type(spec).__name__})")
    if not KIND_RE.fullmatch(spec.kind) or spec.kind in BUILT_IN:
        raise ConfigError("channels", f"{origin}: {spec.kind!r} is not a free channel kind (lower case, a-z 0-9 _ -)")
    if spec.kind in found:
        raise ConfigError("channels", f"{origin}: channel kind {spec.kind!r} is registered twice")
    found[spec.kind] = spec


def _built_in(found: dict[str, ChannelSpec]) -> None:
    try:
        package = importlib.import_module(BUILT_IN_PACKAGE)
    except ImportError:  # installed without the adapters package: plugins only
        return
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.ispkg:
            spec = getattr(importlib.import_module(f"{BUILT_IN_PACKAGE}.{info.name}"), "SPEC", None)
            if spec is not None:
                _add(found, spec, f"{BUILT_IN_PACKAGE}.{info.name}.SPEC")


def _plugins(found: dict[str, ChannelSpec]) -> None:
    for entry in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
        origin = f"entry point {entry.name!r} ({entry.value})"
        try:
            spec = entry.load()
        except Exception as exc:  # a broken plugin stops the start with one line naming it
            raise ConfigError("channels", f"{origin} failed to load: {type(exc).__name__}: {exc}") from None
        if isinstance(spec, ChannelSpec) and spec.kind != entry.name:
            raise ConfigError("channels", f"{origin} declares kind {spec.kind!r}; name the entry point after it")
        _add(found, spec, origin)


def discover() -> Mapping[str, ChannelSpec]:
    """Every installed channel spec by kind, looked up afresh (built-in ones first)."""
    found: dict[str, ChannelSpec] = {}
    _built_in(found)
    _plugins(found)
    return found


@functools.cache
def installed() -> Mapping[str, ChannelSpec]:
    """`discover()`, once per process."""
    return discover()


__all__ = ["BUILT_IN_PACKAGE", "GROUP", "discover", "installed"]
