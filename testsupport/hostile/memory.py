"""How much the test process's resident memory grew at its peak during a block.

``/proc/self/clear_refs`` with ``5`` resets the peak (``VmHWM``) to the current
resident size, so the peak read after the block is the block's own: it holds
what the gateway (running in the test's process) buffered, whatever it freed later.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testsupport.peers import peer_unavailable

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
MIB = 1024 * 1024


def _status_kib(field: str) -> int:
    for line in STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


@dataclass
class PeakGrowth:
    """The peak resident size during the block minus the size at its start, in bytes."""

    start: int = 0
    peak: int = 0

    @property
    def grown(self) -> int:
        """Bytes the peak exceeded the start by."""
        return max(0, self.peak - self.start)


@contextlib.contextmanager
def peak_growth() -> Iterator[PeakGrowth]:
    """Measure the peak resident growth of this process during the block."""
    try:
        CLEAR_REFS.write_text("5")
    except OSError as exc:
        peer_unavailable("clear_refs", f"cannot reset the peak resident size: {exc}")
    growth = PeakGrowth(start=_status_kib("VmRSS") * 1024)
    try:
        yield growth
    finally:
        growth.peak = _status_kib("VmHWM") * 1024
