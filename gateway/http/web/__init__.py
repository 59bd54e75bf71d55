"""The web inbox, sign-in and dashboard: server-rendered pages with session cookies."""
