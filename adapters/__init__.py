"""Channel adapters, loaded by name through `gateway.channels.load_channel`."""
