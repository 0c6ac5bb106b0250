"""File modes in the data directory: a permissive umask for the test, and the check."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """Run the test under umask 022, so a file created with the defaults would be 0644."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def modes(directory: Path) -> dict[str, int]:
    """``{relative path: permission bits}`` of ``directory`` and everything under it."""
    found = {".": stat.S_IMODE(directory.stat().st_mode)}
    for path in directory.rglob("*"):
        if not path.is_symlink():
            found[str(path.relative_to(directory))] = stat.S_IMODE(path.stat().st_mode)
    return found


def assert_private(directory: Path) -> dict[str, int]:
    """Every directory under ``directory`` (itself included) is 0700, every file 0600."""
    found = modes(directory)
    wrong = {
        name: oct(mode)
        for name, mode in found.items()
        if mode != (0o700 if (directory / name).is_dir() else 0o600)
    }
    assert not wrong, f"not private in {directory}: {wrong}"
    return found
