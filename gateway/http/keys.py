"""Typed application keys."""

from __future__ import annotations

from aiohttp import web

from gateway.runtime import Runtime

RUNTIME = web.AppKey("runtime", Runtime)
