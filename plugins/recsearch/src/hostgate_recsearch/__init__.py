"""hostgate-recsearch: search across recordings, the index of commands and terminal output."""
