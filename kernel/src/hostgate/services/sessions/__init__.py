"""Open and past sessions: terminals and relays, live registry, recordings, command logs, files."""
