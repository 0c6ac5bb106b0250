"""The one place where hostgate reaches into third-party private names.

Each module here patches or reads the internals of one library (``hypercorn``,
``asyncio_streams``, ``wsproto``, ``aiosqlite``, ``asyncssh``) for a measured
speed-up or what no public hook offers, and only within the exact version range
it was written and tested against (``VersionRange``: what ``uv.lock`` pins, up to the next
minor release). Outside that range, or with ``HOSTGATE_COMPAT_PATCHES=off``, the
library's stock behaviour runs; an out-of-range version is logged once as a
warning, so an upgrade never breaks silently: it runs slower and says why.

Nothing outside this package may use a third-party private name
(``tests/kernel/test_compat.py`` greps the tree for them).
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import platform
from dataclasses import dataclass

SWITCH = "HOSTGATE_COMPAT_PATCHES"
"""Environment variable: ``off`` (or ``0``/``false``/``no``) turns every patch off;
``off:hypercorn,wsproto`` turns off the patches of those compat modules only."""
_OFF = {"off", "0", "false", "no"}
log = logging.getLogger("hostgate.compat")

_warned: set[str] = set()


def patches_enabled() -> bool:
    """False when ``HOSTGATE_COMPAT_PATCHES`` switches every patch off."""
    return os.environ.get(SWITCH, "on").strip().lower() not in _OFF


def switched_off() -> frozenset[str]:
    """The compat modules ``HOSTGATE_COMPAT_PATCHES=off:a,b`` names (empty otherwise)."""
    value = os.environ.get(SWITCH, "").strip().lower()
    word, colon, names = value.partition(":")
    if not colon or word not in _OFF:
        return frozenset()
    return frozenset(name.strip() for name in names.split(",") if name.strip())


@functools.cache
def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (None if it is not installed).

    ``python`` names the interpreter (its standard library: asyncio). Read once per
    process: a metadata lookup scans ``sys.path`` and every app built asks again.
    """
    if distribution == "python":
        return platform.python_version()
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string (``"0.18.0"`` -> ``(0, 18, 0)``)."""
    parts: list[int] = []
    for piece in version.split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break  # a pre-release or local tail ends the release
    return tuple(parts)


@dataclass(frozen=True)
class VersionRange:
    """Versions ``lowest <= v < below`` of one distribution that a patch was written against."""

    distribution: str
    lowest: str
    below: str

    def admits(self, version: str | None) -> bool:
        """Whether ``version`` lies in this range (an absent library never does)."""
        if version is None:
            return False
        release = _release(version)
        return _release(self.lowest) <= release < _release(self.below)


def applies(patch: str, *ranges: VersionRange) -> bool:
    """Whether ``patch`` may run: patches on, and every library in its range.

    An out-of-range library is logged as a warning once per patch per process;
    the caller then keeps the library's stock behaviour.
    """
    if not patches_enabled() or patch.partition(".")[0] in switched_off():
        return False
    for wanted in ranges:
        found = installed_version(wanted.distribution)
        if not wanted.admits(found):
            if patch not in _warned:
                _warned.add(patch)
                log.warning(
                    "compat patch %s is off: it was written for %s >=%s,<%s and %s is installed;"
                    " the library's stock behaviour runs",
                    patch,
                    wanted.distribution,
                    wanted.lowest,
                    wanted.below,
                    found or "none",
                )
            return False
    return True
