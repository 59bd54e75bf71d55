"""Discord fixtures (tests/discord/support.py)."""

from tests.discord.support import discord, discord_settings, fake_discord

__all__ = ["discord", "discord_settings", "fake_discord"]
