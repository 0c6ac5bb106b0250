"""What this machine's kernel does with transparent huge pages, and how much a process has."""

from __future__ import annotations

import os
from pathlib import Path

THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def thp_mode() -> str:
    """``always``, ``madvise`` or ``never`` (the bracketed choice of the sysfs switch)."""
    text = THP_ENABLED.read_text() if THP_ENABLED.exists() else "[never]"
    return text.partition("[")[2].partition("]")[0]


def kernel_collapses() -> bool:
    """Linux 6.1+ (``MADV_COLLAPSE``) with transparent huge pages not switched off."""
    release = tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2])
    return release >= (6, 1) and thp_mode() != "never"


def anon_huge_bytes(pid: int | str = "self") -> int:
    """The process's anonymous memory on transparent huge pages (``smaps_rollup``)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1]) * 1024
    return 0
