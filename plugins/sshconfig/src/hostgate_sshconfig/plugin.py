"""The pack's hooks: its two routes and ``hostgate sshconfig import|export``."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hostgate import CommandArgument, CommandSpec, InvalidInput, KernelAPI, hookimpl

if TYPE_CHECKING:
    from quart import Blueprint

REFERENCE_LINE = re.compile(r"^\s*(include|identityfile)\s*(?:=\s*|\s+)(.+)$", re.I | re.M)
MAX_REFERENCED = 100


@hookimpl
def register_blueprints() -> Sequence[Blueprint]:
    """``/connections/import/ssh-config`` and ``/connections/export/ssh-config``."""
    from .routes import blueprint

    return [blueprint]


def referenced_files(config: Path) -> dict[str, str]:
    """The files an ssh_config includes or names as IdentityFile, read from disk.

    Names are relative to the configuration's directory (as ``~/.ssh`` paths are), or
    absolute; only files the configuration names are read. Arguments are split as
    ``ssh`` splits them (unbalanced quotes are an ``InvalidInput``).
    """
    from .parser import split_arguments

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


async def _import(kernel: KernelAPI, arguments: Mapping[str, Any]) -> str:
    """Create SSH connections from an ssh_config; nothing changes unless all of it is valid."""
    from .parser import plan_import

    config = Path(str(arguments["file"])).expanduser()
    try:
        text = config.read_text()
    except OSError as exc:
        raise InvalidInput(f"{config}: {exc.strerror}") from None
    files = referenced_files(config)
    plan = await asyncio.to_thread(plan_import, text, files)
    dry_run = bool(arguments["dry_run"])
    made = await kernel.connection_transfer.import_document(
        str(arguments["owner"]), plan.document, plain_secrets=plan.private_keys, dry_run=dry_run
    )
    lines = [f"skipped {skipped.where}: {skipped.reason}" for skipped in plan.skipped]
    verb = "would create" if dry_run else "created"
    names = f": {', '.join(c.name for c in made)}" if dry_run and made else ""
    lines.append(f"{verb} {len(made)} connections{names}")
    return "\n".join(lines)


async def _export(kernel: KernelAPI, arguments: Mapping[str, Any]) -> str:
    """A user's SSH connections as ssh_config (through the door given with ``--door``)."""
    from .export import export_text
    from .parser import Door

    user = str(arguments["user"])
    door = None
    if arguments["door"]:
        host, _, port = str(arguments["door"]).rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidInput("--door is the front door's HOST:PORT (gateway.example.org:2222)")
        door = Door(host=host.strip("[]"), port=int(port), user=user)
    link = str(arguments["gateway_url"]).rstrip("/") + "/connections/{id}"
    text, _ = await export_text(kernel, user, user, link, door)
    return text.rstrip("\n")


@hookimpl
def register_commands() -> Sequence[CommandSpec]:
    """``hostgate sshconfig import FILE --owner USER`` and ``export --user USER``."""
    return [
        CommandSpec(
            name="sshconfig",
            help="connections from and to OpenSSH client configuration (~/.ssh/config)",
            actions={
                "import": ("create SSH connections from an ssh_config file", _import),
                "export": ("print a user's SSH connections as an ssh_config fragment", _export),
            },
            arguments={
                "import": [
                    CommandArgument("file", "the ssh_config file (e.g. ~/.ssh/config)"),
                    CommandArgument(
                        "--owner", "the user who will own the connections", required=True
                    ),
                    CommandArgument("--dry-run", "say what would be created, only", flag=True),
                ],
                "export": [
                    CommandArgument("--user", "whose connections (own and shared)", required=True),
                    CommandArgument(
                        "--door",
                        "HOST:PORT of the SSH front door: every host goes through it",
                    ),
                    CommandArgument(
                        "--gateway-url",
                        "the gateway's address, for the link to each connection's page",
                        default="https://hostgate",
                    ),
                ],
            },
        )
    ]
