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
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import jsoninput
from ..errors import ApiError
from ..principals import ClientInfo
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

    ssh = sub.add_parser(
        "import-ssh-config", help="create SSH connections from an OpenSSH client configuration"
    )
    ssh.add_argument("file", help="the ssh_config file (e.g. ~/.ssh/config)")
    ssh.add_argument("--owner", required=True, help="the user who will own the connections")
    ssh.add_argument("--dry-run", action="store_true", help="say what would be created, only")
    ssh.set_defaults(handler=run_import_ssh_config)


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


REFERENCE_LINE = re.compile(r"^\s*(include|identityfile)\s*(?:=\s*|\s+)(.+)$", re.I | re.M)
MAX_REFERENCED = 100


def referenced_files(config: Path) -> dict[str, str]:
    """The files an ssh_config includes or names as IdentityFile, read from disk.

    Names are relative to the configuration's directory (as ``~/.ssh`` paths are), or
    absolute; only files the configuration names are read. Arguments are split as
    ``ssh`` splits them (unbalanced quotes are an ``InvalidInput``).
    """
    from ..services.connections.ssh_config import split_arguments

    base = config.parent
    files: dict[str, str] = {}
    pending = [config.read_text()]
    while pending:
        for match in REFERENCE_LINE.finditer(pending.pop()):
            for argument in split_arguments(match.group(2), match.group(1)):
                name = os.path.expanduser(argument)
                for prefix in ("~/.ssh/", "$HOME/.ssh/"):
                    name = argument[len(prefix) :] if argument.startswith(prefix) else name
                root = Path("/") if os.path.isabs(name) else base
                for path in sorted(root.glob(name.lstrip("/") if root == Path("/") else name)):
                    key = str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
                    if path.is_file() and key not in files and len(files) < MAX_REFERENCED:
                        files[key] = path.read_text(errors="replace")
                        if match.group(1).lower() == "include":
                            pending.append(files[key])
    return files


def run_import_ssh_config(args: argparse.Namespace) -> int:
    """Create SSH connections from an ssh_config; nothing changes unless all of it is valid."""
    config = Path(args.file).expanduser()
    text = config.read_text()
    try:
        files = referenced_files(config)
    except ApiError as exc:
        print(f"hostgate: {exc.message}", file=sys.stderr)
        return 1

    async def work(kernel: Kernel) -> Any:
        owner_id = await _user_id(kernel, args.owner)
        assert owner_id is not None
        caller = await kernel.identity.caller_for_user(owner_id, None, ClientInfo())
        assert caller is not None
        return await kernel.connections.transfer.import_ssh_config(
            caller, text, files, dry_run=args.dry_run
        )

    try:
        result, plan = with_kernel(args, work)
    except ApiError as exc:
        print(f"hostgate: {exc.message}", file=sys.stderr)
        return 1
    for skipped in plan.skipped:
        print(f"skipped {skipped.where}: {skipped.reason}", file=sys.stderr)
    verb = "would create" if args.dry_run else "created"
    names = [c.name for c in result.planned] if args.dry_run else None
    print(
        f"{verb} {len(result.connection_ids)} connections"
        + (f": {', '.join(names)}" if names else "")
    )
    return 0


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
