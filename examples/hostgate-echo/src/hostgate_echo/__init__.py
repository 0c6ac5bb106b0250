"""hostgate-echo: an example pack."""
