"""Cards on channels: the Channel protocol and registry, and the outbox that delivers them."""
