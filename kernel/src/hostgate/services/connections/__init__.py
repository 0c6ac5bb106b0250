"""Stored connections: their fields and secrets, groups, sharing, host keys, import and export."""
