"""Recording files: which ones a backup carries, and which names a restore accepts."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("hostgate.backup")

RECORDINGS_DIR = "recordings"
PART_PREFIX = "recordings/"
MAX_DEPTH = 8
_COMPONENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


@dataclass(frozen=True)
class RecordingFile:
    """A recording file on disk and its name inside an archive."""

    path: Path
    relative: str
    size: int


def safe_relative(relative: str) -> bool:
    """True for a plain relative path: no ``..``, no hidden or odd names, bounded depth."""
    parts = relative.split("/")
    return 0 < len(parts) <= MAX_DEPTH and all(_COMPONENT.fullmatch(p) for p in parts)


def recording_files(root: Path) -> Iterator[RecordingFile]:
    """Every regular file under ``root`` (sorted, symlinks skipped) whose name a restore accepts."""
    if not root.is_dir():
        return
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not Path(directory, d).is_symlink())
        for name in sorted(names):
            path = Path(directory, name)
            relative = path.relative_to(root).as_posix()
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue
            if not path.is_file() or path.is_symlink():
                continue
            if not safe_relative(relative):
                log.warning("backup skips recording file with an unusual name: %r", relative)
                continue
            yield RecordingFile(path, relative, info.st_size)


def recordings_summary(root: Path) -> tuple[int, int]:
    """``(count, total bytes)`` of the files a backup would carry."""
    count = total = 0
    for item in recording_files(root):
        count += 1
        total += item.size
    return count, total
