"""Resume jobs: claim, launch (command, entrypoint pool, url), classify, retry, record."""
