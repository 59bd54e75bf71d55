"""Logs (one redacted line per event, request ids) and Prometheus metrics."""
