"""hostgate-passkey: see plugin.py for the hooks."""
