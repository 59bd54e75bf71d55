"""Channel adapters: each package with a `SPEC` is a built-in channel, found by
`gateway.delivery.registry` (plugins come from the `hitl_gateway.channels` entry points)."""
