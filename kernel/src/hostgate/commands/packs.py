"""Commands packs add through ``register_commands``: ``hostgate <name> <action>``."""

from __future__ import annotations

import argparse
import logging
import os
from typing import TYPE_CHECKING, Any

from ..descriptors import CommandRun, CommandSpec
from ..plugins import PluginHost
from .common import with_kernel

if TYPE_CHECKING:
    from ..kernel import Kernel

log = logging.getLogger("hostgate.cli")


def pack_commands() -> list[CommandSpec]:
    """Every installed, enabled pack's commands (HOSTGATE_DISABLE_PLUGINS honoured)."""
    disabled = [
        n.strip() for n in os.environ.get("HOSTGATE_DISABLE_PLUGINS", "").split(",") if n.strip()
    ]
    host = PluginHost()
    host.load(entry_points=True, disabled=disabled)
    return [spec for _, specs in host.contributions("register_commands") for spec in specs]


def register(subparsers: Any) -> None:
    """Add each pack's commands whose name is free (registered after the kernel's)."""
    taken = set(subparsers.choices)
    for spec in pack_commands():
        if spec.name in taken:
            log.warning("the command %r of a pack is skipped: the name is taken", spec.name)
            continue
        taken.add(spec.name)
        parser = subparsers.add_parser(spec.name, help=spec.help)
        sub = parser.add_subparsers(dest=f"{spec.name}_command", metavar="ACTION", required=True)
        for action, (text, run) in spec.actions.items():
            sub.add_parser(action, help=text).set_defaults(handler=_handler(run))


def _handler(run: CommandRun) -> Any:
    def handle(args: argparse.Namespace) -> int:
        async def work(kernel: Kernel) -> str:
            return await run(kernel)

        print(with_kernel(args, work))
        return 0

    return handle
