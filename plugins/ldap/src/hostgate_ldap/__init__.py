"""hostgate-ldap: see plugin.py for the hooks."""
