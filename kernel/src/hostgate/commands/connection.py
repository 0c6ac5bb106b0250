"""``hostgate connection export|import``: move connections and groups as JSON.

Secrets (passwords, private keys, secret pack fields) are exported only with
``--with-secrets``, and then only encrypted under a key derived from a passphrase
(scrypt + AES-256-GCM). The passphrase is read from ``--passphrase-file``, the
``HOSTGATE_EXPORT_PASSPHRASE`` environment variable, or a prompt; never from the
command line, where other users could see it.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import jsoninput
from ..errors import ApiError
from .common import with_kernel

if TYPE_CHECKING:
    from ..kernel import Kernel

PASSPHRASE_ENV = "HOSTGATE_EXPORT_PASSPHRASE"


def register(subparsers: Any) -> None:
    """Add ``connection``."""
    parser = subparsers.add_parser("connection", help="export and import stored connections")
    sub = parser.add_subparsers(dest="connection_command", metavar="ACTION", required=True)

    export = sub.add_parser("export", help="write connections and groups as JSON")
    export.add_argument("--owner", help="only this user's connections (default: everyone's)")
    export.add_argument("--output", "-o", default="-", help="file to write (default: stdout)")
    export.add_argument(
        "--with-secrets",
        action="store_true",
        help="include credentials, encrypted with a passphrase",
    )
    export.add_argument(
        "--passphrase-file", help=f"read the passphrase here (or ${PASSPHRASE_ENV})"
    )
    export.set_defaults(handler=run_export)

    imp = sub.add_parser("import", help="create connections and groups from an export")
    imp.add_argument("file", help="the export file ('-' for stdin)")
    imp.add_argument("--owner", help="give everything to this user (default: each item's owner)")
    imp.add_argument(
        "--skip-invalid", action="store_true", help="import the valid items, report the rest"
    )
    imp.add_argument(
        "--without-secrets",
        action="store_true",
        help="ignore the encrypted credentials in the file",
    )
    imp.add_argument("--passphrase-file", help=f"read the passphrase here (or ${PASSPHRASE_ENV})")
    imp.set_defaults(handler=run_import)


def read_passphrase(args: argparse.Namespace, *, confirm: bool) -> str:
    """The passphrase from a file, the environment or a prompt."""
    if args.passphrase_file:
        return Path(args.passphrase_file).read_text().rstrip("\r\n")
    if os.environ.get(PASSPHRASE_ENV):
        return os.environ[PASSPHRASE_ENV]
    if not sys.stdin.isatty():
        raise SystemExit(
            f"hostgate: a passphrase is needed: use --passphrase-file or set {PASSPHRASE_ENV}"
        )
    first = getpass.getpass("Passphrase: ")
    if confirm and getpass.getpass("Repeat the passphrase: ") != first:
        raise SystemExit("hostgate: the passphrases differ")
    return first


async def _user_id(kernel: Kernel, username: str | None) -> str | None:
    if username is None:
        return None
    user = await kernel.accounts.user_by_name(username)
    if user is None:
        raise SystemExit(f"hostgate: no user {username!r}")
    return str(user.id)


def _write(path: str, text: str, *, private: bool) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, target)


def run_export(args: argparse.Namespace) -> int:
    """Export connections (credentials only encrypted, only when asked)."""
    passphrase = read_passphrase(args, confirm=True) if args.with_secrets else None

    async def work(kernel: Kernel) -> dict[str, Any]:
        owner_id = await _user_id(kernel, args.owner)
        document: dict[str, Any] = await kernel.connections.transfer.export(
            owner_id=owner_id, passphrase=passphrase
        )
        await kernel.audit.record(
            "connections.exported",
            username="(cli)",
            target=args.owner or "",
            details={
                "groups": len(document["groups"]),
                "connections": len(document["connections"]),
                "withCredentials": passphrase is not None,
            },
        )
        return document

    try:
        document = with_kernel(args, work)
    except ApiError as exc:
        print(f"hostgate: {exc.message}", file=sys.stderr)
        return 1
    _write(args.output, json.dumps(document, indent=2) + "\n", private=args.with_secrets)
    print(
        f"exported {len(document['connections'])} connections and {len(document['groups'])} "
        f"groups{' with encrypted credentials' if passphrase else ''}",
        file=sys.stderr,
    )
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Import an export document; nothing changes unless all of it is valid."""
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    try:
        document = jsoninput.decode(text)
    except ValueError as exc:
        print(f"hostgate: {args.file} is not JSON: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:  # nested too deep, or text that cannot be stored
        print(f"hostgate: {args.file}: {exc.message}", file=sys.stderr)
        return 1
    has_secrets = isinstance(document, dict) and document.get("secrets") is not None
    passphrase = (
        read_passphrase(args, confirm=False) if has_secrets and not args.without_secrets else None
    )

    async def work(kernel: Kernel) -> Any:
        owner_id = await _user_id(kernel, args.owner)
        return await kernel.connections.transfer.import_(
            document,
            owner_id=owner_id,
            passphrase=passphrase,
            skip_invalid=args.skip_invalid,
            ignore_secrets=args.without_secrets,
        )

    try:
        result = with_kernel(args, work)
    except ApiError as exc:
        print(f"hostgate: {exc.message}", file=sys.stderr)
        return 1
    for problem in result.skipped:
        print(f"skipped {problem}", file=sys.stderr)
    print(
        f"imported {len(result.connection_ids)} connections and {len(result.group_ids)} groups"
        f"{' with credentials' if result.secrets_imported else ''}"
    )
    return 0
