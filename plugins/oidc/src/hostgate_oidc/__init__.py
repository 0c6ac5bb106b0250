"""hostgate-oidc: see plugin.py for the hooks."""
