"""hugepages.py: which areas of a process are collapsed into huge pages, and the real kernel."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap

import pytest
from hostgate.hugepages import HUGE_PAGE, MADV_COLLAPSE, Area, areas, collapse_heap

from testsupport.hugepages import kernel_collapses
from testsupport.peers import ROOT_DIR

MIB = 1024 * 1024

SMAPS = """\
55d0c0000000-55d0c0a00000 rw-p 00000000 00:00 0                          [heap]
Size:              10240 kB
Rss:                9000 kB
VmFlags: rd wr mr mw me ac
7f0000100000-7f0000900000 rw-p 00000000 00:00 0
Size:               8192 kB
Rss:                8192 kB
7f0000900000-7f0001100000 rw-p 00000000 00:00 0
Size:               8192 kB
Rss:                  64 kB
7f0001100000-7f0001500000 r-xp 00000000 08:01 1234                       /usr/lib/libpython3.11.so
Size:               4096 kB
Rss:                4096 kB
7f0001500000-7f0001900000 rw-s 00000000 00:05 99                         /dev/zero (deleted)
Size:               4096 kB
Rss:                4096 kB
7f0001900000-7f0001a00000 rw-p 00000000 00:00 0
Size:               1024 kB
Rss:                1024 kB
7ffd00000000-7ffd00400000 rw-p 00000000 00:00 0                          [stack]
Size:               4096 kB
Rss:                4096 kB
"""


def test_areas_are_read_with_their_resident_bytes():
    listed = list(areas(SMAPS.splitlines()))
    assert [(a.backing, a.rights, a.resident) for a in listed] == [
        ("[heap]", "rw-p", 9000 * 1024),
        ("", "rw-p", 8192 * 1024),
        ("", "rw-p", 64 * 1024),
        ("/usr/lib/libpython3.11.so", "r-xp", 4096 * 1024),
        ("/dev/zero", "rw-s", 4096 * 1024),
        ("", "rw-p", 1024 * 1024),
        ("[stack]", "rw-p", 4096 * 1024),
    ]
    assert listed[0].start == 0x55D0C0000000 and listed[0].end == 0x55D0C0A00000


def test_only_the_mostly_resident_private_heap_is_collapsed_on_whole_huge_pages(tmp_path):
    smaps = tmp_path / "smaps"
    smaps.write_text(SMAPS)
    asked: list[tuple[int, int, int]] = []

    def advise(address: int, length: int, advice: int) -> int:
        asked.append((address, length, advice))
        return 0

    collapsed = collapse_heap(smaps=smaps, advise=advise)
    # [heap] (10 MiB, 88 % resident: its 2 MiB-aligned part) and the resident 8 MiB area;
    # not the mostly empty area, code, shared memory, the 1 MiB area (no whole huge
    # page) nor the main thread's stack
    assert asked == [
        (0x55D0C0000000, 10 * MIB, MADV_COLLAPSE),
        (0x7F0000200000, 6 * MIB, MADV_COLLAPSE),
    ]
    assert collapsed == 16 * MIB
    assert Area(0x7F0000100000, 0x7F0000900000, "rw-p", "", 0).huge_span() == (
        0x7F0000200000,
        0x7F0000800000,
    )


@pytest.mark.parametrize("refusal", [errno.EINVAL, errno.EAGAIN, errno.ENOMEM, errno.EBUSY])
def test_an_area_refused_does_not_stop_the_others(tmp_path, refusal):
    """EINVAL is both "no MADV_COLLAPSE here" and "part of this area cannot": seen for the
    ``[heap]`` of a real process, whose other areas then collapsed."""
    smaps = tmp_path / "smaps"
    smaps.write_text(SMAPS)
    asked: list[int] = []

    def advise(address: int, length: int, advice: int) -> int:
        asked.append(address)
        return refusal if len(asked) == 1 else 0

    assert collapse_heap(smaps=smaps, advise=advise) == 6 * MIB  # the second area only
    assert asked == [0x55D0C0000000, 0x7F0000200000]


def test_without_proc_nothing_is_asked(tmp_path):
    asked: list[int] = []
    assert collapse_heap(smaps=tmp_path / "missing", advise=lambda *a: asked.append(1) or 0) == 0
    assert asked == []


def test_a_real_heap_goes_on_huge_pages_and_keeps_its_objects():
    """A process with 100 MiB of objects: after the collapse its smaps counts huge pages
    (where this kernel can), and every object reads back the same."""
    script = textwrap.dedent(
        """
        import json
        from hostgate.hugepages import collapse_heap
        from testsupport.hugepages import anon_huge_bytes

        objects = [[i, str(i), (i, i)] for i in range(700_000)]
        before = anon_huge_bytes()
        collapsed = collapse_heap()
        intact = all(o == [i, str(i), (i, i)] for i, o in enumerate(objects))
        print(json.dumps({"before": before, "collapsed": collapsed, "after": anon_huge_bytes(),
                          "intact": intact}))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT_DIR,  # testsupport is imported from the checkout
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    figures = json.loads(result.stdout)
    assert figures["intact"] is True
    if kernel_collapses():
        assert figures["collapsed"] >= 32 * MIB, figures
        assert figures["after"] - figures["before"] >= 16 * MIB, figures
        assert figures["collapsed"] % HUGE_PAGE == 0
    else:  # the fallback: every area refused, nothing changed
        assert figures["collapsed"] == 0 and figures["after"] == figures["before"], figures
