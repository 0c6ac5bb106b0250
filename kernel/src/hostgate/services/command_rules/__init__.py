"""Command rules: block, hold for approval or flag the command lines typed in terminals."""
