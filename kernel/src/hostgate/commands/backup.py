"""``hostgate backup export|import|verify``: encrypted archives from the shell."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..datadir import private_open
from ..errors import ApiError
from .common import with_kernel

if TYPE_CHECKING:
    from ..kernel import Kernel

PASSWORD_ENV = "HOSTGATE_BACKUP_PASSWORD"
CLI_ACTOR = "cli"


def register(subparsers: Any) -> None:
    """Add ``backup``."""
    parser = subparsers.add_parser("backup", help="encrypted backup and restore")
    sub = parser.add_subparsers(dest="backup_command", metavar="ACTION", required=True)
    export = sub.add_parser("export", help="write an encrypted archive of this instance")
    export.add_argument("file", help="where to write the archive (.geb)")
    export.add_argument(
        "--include-recordings", action="store_true", help="also carry every recording file"
    )
    _password_option(export)
    export.set_defaults(handler=run_export)
    restore = sub.add_parser(
        "import", help="replace this instance's data with an archive (stop the server first)"
    )
    restore.add_argument("file", help="the archive (.geb)")
    _password_option(restore)
    restore.set_defaults(handler=run_import)
    verify = sub.add_parser("verify", help="check an archive completely without restoring it")
    verify.add_argument("file", help="the archive (.geb)")
    _password_option(verify)
    verify.set_defaults(handler=run_verify)


def _password_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--password-file",
        help=f"read the password from this file (else ${PASSWORD_ENV}, else a prompt)",
    )


def read_password(args: argparse.Namespace, *, confirm: bool) -> str:
    """The archive password: ``--password-file``, the environment, or a prompt."""
    if args.password_file:
        lines = Path(args.password_file).read_text().splitlines()
        return lines[0] if lines else ""
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    if not sys.stdin.isatty():
        raise ApiError(f"no password: use --password-file or ${PASSWORD_ENV}")
    password = getpass.getpass("Backup password: ")
    if confirm and getpass.getpass("Repeat the password: ") != password:
        raise ApiError("the passwords differ")
    return password


def human(size: float) -> str:
    """``12.3 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


class ProgressBar:
    """A one-line text progress bar on stderr, redrawn when the percentage changes."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self._last: tuple[str, int] | None = None
        self._open = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        """Report ``done`` of ``total`` for ``phase`` (total 0: no size known)."""
        percent = min(100, int(done * 100 / total)) if total > 0 else -1
        if self._last == (phase, percent):
            return
        if self._last is not None and self._last[0] != phase:
            self.finish()
        self._last = (phase, percent)
        if percent < 0:
            line = f"{phase}..."
        else:
            filled = self.width * percent // 100
            bar = "#" * filled + "-" * (self.width - filled)
            line = f"{phase:<10} [{bar}] {percent:3d}% {human(done)} / {human(total)}"
        self.stream.write("\r" + line)
        self.stream.flush()
        self._open = True

    def finish(self) -> None:
        """End the current line."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


def _fail(error: ApiError | OSError) -> int:
    message = error.message if isinstance(error, ApiError) else str(error)
    print(f"hostgate: {message}", file=sys.stderr)
    return 1


def run_export(args: argparse.Namespace) -> int:
    """Write an archive (to ``FILE.part``, renamed when complete)."""
    from ..services.backup import check_password

    target = Path(args.file)
    try:
        password = read_password(args, confirm=True)
        check_password(password)
    except (ApiError, OSError) as exc:
        return _fail(exc)
    bar = ProgressBar()
    partial = target.with_name(target.name + ".part")

    async def work(kernel: Kernel) -> int:
        sizes = await kernel.backups.size()
        total = sizes["dbSize"] + (sizes["recordingsSize"] if args.include_recordings else 0)
        written = 0
        with private_open(partial, "wb") as handle:
            async for chunk in kernel.backups.export(
                password, include_recordings=args.include_recordings
            ):
                handle.write(chunk)
                written += len(chunk)
                bar("exporting", written, max(total, written))
            bar("exporting", written, written)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
        await kernel.audit.record(
            "backup.exported",
            username=CLI_ACTOR,
            target=target.name,
            details={"includeRecordings": args.include_recordings, "sizeBytes": written},
        )
        return written

    try:
        written = with_kernel(args, work)
    except (ApiError, OSError) as exc:
        bar.finish()
        partial.unlink(missing_ok=True)
        return _fail(exc)
    bar.finish()
    print(f"wrote {target} ({human(written)})")
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Restore an archive into this instance's data directory and database."""
    source = Path(args.file)
    try:
        password = read_password(args, confirm=False)
        if not source.is_file():
            raise ApiError(f"{source} does not exist")
    except (ApiError, OSError) as exc:
        return _fail(exc)
    bar = ProgressBar()

    async def work(kernel: Kernel) -> Any:
        async with kernel.backups.import_slot() as slot:
            result = await kernel.backups.restore(source, password, slot, progress=bar)
        await kernel.audit.record(
            "backup.imported",
            username=CLI_ACTOR,
            target=result.exported_at,
            details={
                "recordingsRestored": result.recordings_restored,
                "rows": sum(result.rows.values()),
                "sourceVersion": result.source_version,
            },
        )
        return result

    try:
        result = with_kernel(args, work, shared=True)
    except (ApiError, OSError) as exc:
        bar.finish()
        return _fail(exc)
    bar.finish()
    print(
        f"restored {sum(result.rows.values())} rows and {result.recordings_restored} recordings "
        f"from a backup made {result.exported_at}; every login session was signed out"
    )
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """Check every byte, checksum, the schema and every secret of an archive; change nothing."""
    from ..services.backup import stage_archive

    source = Path(args.file)
    bar = ProgressBar()
    try:
        password = read_password(args, confirm=False)
        with tempfile.TemporaryDirectory(prefix="hostgate-verify-") as directory:
            staged = stage_archive(
                source,
                password,
                Path(directory),
                live=None,
                write_recordings=False,
                progress=bar,
            )
    except (ApiError, OSError) as exc:
        bar.finish()
        return _fail(exc)
    bar.finish()
    meta = staged.meta
    print(f"{source}: OK")
    print(f"  made           {meta.get('exportedAt')} by hostgate {meta.get('version')}")
    print(f"  schema         {meta['schema']['revision']} ({meta.get('dialect')})")
    print(f"  rows           {sum(staged.rows.values())} in {len(staged.rows)} tables")
    print(f"  secrets        {staged.secrets}")
    recordings = f"{staged.recordings_count} ({human(staged.recordings_bytes)})"
    print(f"  recordings     {recordings if meta.get('includeRecordings') else 'not included'}")
    return 0
