"""hitl-gateway: an async human-in-the-loop approval gateway for AI agents."""

__version__ = "0.1.0"
__all__ = ["__version__"]
