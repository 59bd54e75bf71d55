"""What the outbox still imports from here; the Channel protocol and addresses now live in
`gateway.core.channels` (pure), and plugins import them from `gateway.plugin`."""

from __future__ import annotations

from gateway.core.channels import Attempt, Channel, DeliveryError, OutgoingCard, parse_address

__all__ = ["Attempt", "Channel", "DeliveryError", "OutgoingCard", "parse_address"]
