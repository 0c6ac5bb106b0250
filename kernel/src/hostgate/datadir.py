"""The data directory is private: directories 0700, files 0600, whatever the umask.

It holds the database (and SQLite's WAL/SHM files, which SQLite creates with the
database file's mode), the generated encryption key, recordings, staged backups
and their temporary files, and generated TLS certificates. Everything that writes
there creates directories with ``private_dir`` and files with ``private_open``;
``tighten`` brings an existing install's older files to the same modes at start-up.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import IO, Any

from sqlalchemy.engine import make_url

log = logging.getLogger("hostgate.datadir")

DIR_MODE = 0o700
FILE_MODE = 0o600

_FLAGS = {
    "r+b": os.O_RDWR,
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "wb": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "w+b": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
    "xb": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
}


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make ``path`` itself 0700."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if stat.S_IMODE(path.stat().st_mode) != DIR_MODE:
        path.chmod(DIR_MODE)
    return path


def private_open(path: Path, mode: str = "wb") -> IO[Any]:
    """``open(path, mode)`` for the modes writers use, the file 0600 even if it existed."""
    fd = os.open(path, _FLAGS[mode], FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def private_sqlite_file(url: str) -> None:
    """Create a SQLite database file 0600 before SQLite does (it would use the umask).

    SQLite gives the ``-wal`` and ``-shm`` files the database file's mode.
    """
    parsed = make_url(url)
    database = parsed.database
    if not parsed.drivername.startswith("sqlite") or not database or database == ":memory:":
        return
    path = Path(database)
    if path.parent.is_dir():
        private_open(path, "a").close()


def tighten(directory: Path) -> int:
    """Make every directory under ``directory`` 0700 and every file 0600; count changes.

    Symbolic links and what they point to are left alone.
    """
    changed = 0
    if not directory.is_dir():
        return 0
    for root, dirs, files in os.walk(directory):
        for name, wanted in [(root, DIR_MODE)] + [
            (os.path.join(root, item), FILE_MODE) for item in files
        ]:
            try:
                info = os.lstat(name)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(info.st_mode) or stat.S_IMODE(info.st_mode) == wanted:
                continue
            if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
                continue
            os.chmod(name, wanted)
            changed += 1
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    return changed


def prepare(directory: Path, database_url: str) -> None:
    """At start-up: the data dir 0700, older files tightened (logged), the database 0600."""
    changed = tighten(directory)
    private_dir(directory)
    if changed:
        log.warning(
            "tightened permissions of %d paths in the data directory %s "
            "(directories 0700, files 0600)",
            changed,
            directory,
        )
    private_sqlite_file(database_url)
