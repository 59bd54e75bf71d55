"""The HTTP API and concurrency tests again, on uvloop (the loop `hitl-gateway serve` uses)."""

from __future__ import annotations

from tests.integration.test_api import *  # noqa: F403
from tests.integration.test_concurrency import *  # noqa: F403
