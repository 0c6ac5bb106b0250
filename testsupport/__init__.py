"""Test support shared by kernel and pack tests: app fixtures and real-peer launchers."""
