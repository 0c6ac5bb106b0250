"""Kernel services: the logic api modules call. No HTTP here."""
