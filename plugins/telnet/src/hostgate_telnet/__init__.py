"""hostgate-telnet: the ``telnet`` terminal over plain TCP (RFC 854 and friends)."""
