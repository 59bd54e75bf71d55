"""The `hitl-gateway` command (also `python -m gateway`)."""

from gateway.cli.main import main

__all__ = ["main"]
