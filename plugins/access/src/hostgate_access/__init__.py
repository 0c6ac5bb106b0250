"""hostgate-access: access requests, time-boxed use of connections that need approval."""
