"""Back the start-up heap with transparent huge pages (Linux ``MADV_COLLAPSE``).

Every request walks objects built at start-up (the packs' modules, the routes, the
app's code objects: ~150,000 objects over ~50 MiB, frozen by ``gc.freeze()``). On 4 KiB
pages those objects sit on thousands of pages, and the request pays a TLB miss for
many of them; on 2 MiB pages the same walk needs a few dozen TLB entries. Python
3.11's object allocator maps its arenas 1 MiB at a time without asking for huge
pages, so ``hostgate serve`` asks the kernel to collapse the resident part of its
heap once start-up is over (docs/performance.md: 4–6 % less CPU per API request).

Linux 6.1 or later with transparent huge pages not set to ``never``; elsewhere (or
where the kernel refuses) nothing changes. Only areas mostly resident already are
collapsed, so memory grows by at most the untouched rest of their 2 MiB pages.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

HUGE_PAGE = 2 * 1024 * 1024
MADV_COLLAPSE = 25
MIN_RESIDENT = 0.5
"""An area is collapsed when at least this share of it is resident already."""


@dataclass(frozen=True)
class Area:
    """One mapping of ``/proc/self/smaps``: where it lies, its rights, what backs it."""

    start: int
    end: int
    rights: str
    backing: str
    resident: int

    def collapsible(self, min_resident: float) -> bool:
        """Writable private heap memory (anonymous or ``[heap]``), mostly resident."""
        if not self.rights.startswith("rw") or self.rights[3:4] != "p":
            return False
        if self.backing not in ("", "[heap]"):
            return False
        return self.resident >= min_resident * (self.end - self.start)

    def huge_span(self) -> tuple[int, int]:
        """The 2 MiB-aligned part of the area (empty when it holds no whole huge page)."""
        low = -(-self.start // HUGE_PAGE) * HUGE_PAGE
        high = self.end // HUGE_PAGE * HUGE_PAGE
        return low, max(low, high)


def areas(lines: Iterable[str]) -> Iterator[Area]:
    """The mappings listed in ``smaps`` text, each with its resident bytes."""
    head: list[str] | None = None
    resident = 0
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        if not fields[0].endswith(":"):  # a mapping's first line: range, rights, ...
            if head is not None:
                yield _area(head, resident)
            head, resident = fields, 0
        elif fields[0] == "Rss:" and len(fields) > 1:
            resident = int(fields[1]) * 1024
    if head is not None:
        yield _area(head, resident)


def _area(head: list[str], resident: int) -> Area:
    start, _, end = head[0].partition("-")
    backing = head[5] if len(head) > 5 else ""
    return Area(int(start, 16), int(end, 16), head[1], backing, resident)


Advise = Callable[[int, int, int], int]
"""``madvise(address, length, advice)``: 0, or the errno it failed with."""


def _libc_madvise() -> Advise | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int

    def advise(address: int, length: int, advice: int) -> int:
        return 0 if madvise(address, length, advice) == 0 else ctypes.get_errno()

    return advise


def collapse_heap(
    *,
    min_resident: float = MIN_RESIDENT,
    smaps: Path = Path("/proc/self/smaps"),
    advise: Advise | None = None,
) -> int:
    """Collapse this process's resident heap into huge pages; the bytes collapsed.

    Counted are the areas collapsed whole (an area the kernel refused may still be
    collapsed in part). 0 when the platform cannot (not Linux, a kernel before 6.1,
    huge pages set to ``never``: each area is refused, a few dozen system calls): the
    process goes on on small pages. ``smaps`` and ``advise`` are for tests.
    """
    if not sys.platform.startswith("linux"):
        return 0
    advise = advise or _libc_madvise()
    if advise is None:
        return 0
    try:
        listed = list(areas(smaps.read_text().splitlines()))
    except OSError:
        return 0
    collapsed = 0
    for area in listed:
        if not area.collapsible(min_resident):
            continue
        low, high = area.huge_span()
        if high == low:
            continue
        failed = advise(low, high - low, MADV_COLLAPSE)
        if failed == 0:
            collapsed += high - low
        else:
            # EINVAL: a kernel without MADV_COLLAPSE, or a part of this area it cannot
            # collapse (the rest of the area may be collapsed all the same); EAGAIN,
            # ENOMEM, EBUSY: no huge page for it just now. The other areas may still go.
            log.debug("huge pages: %s on %d MiB", errno.errorcode.get(failed), (high - low) >> 20)
    return collapsed
