"""Malicious peers for the hostile-server tests: each one is a real server on 127.0.0.1.

They break the rules on purpose (oversized lengths, endless streams, names that
carry escapes), so the tests can show the gateway stays up, keeps its memory
bounded and tells the user what went wrong. ``memory`` measures the peak.
"""
