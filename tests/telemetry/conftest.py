"""The tests of traces need opentelemetry-sdk (the extra `traces`, in `dev`): without it they
are not collected."""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("opentelemetry") is None or importlib.util.find_spec("opentelemetry.sdk") is None:
    collect_ignore_glob = ["test_*.py"]
else:
    from tests.telemetry.spans import spans as spans
