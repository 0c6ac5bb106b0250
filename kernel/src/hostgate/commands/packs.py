"""Commands packs add through ``register_commands``: ``hostgate <name> <action>``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, cast

from ..descriptors import CommandArgument, CommandRun, CommandRunWithArguments, CommandSpec
from ..errors import ApiError
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
            action_parser = sub.add_parser(action, help=text)
            arguments = spec.arguments.get(action)
            for argument in arguments or ():
                _add(action_parser, argument)
            action_parser.set_defaults(handler=_handler(run, with_arguments=arguments is not None))


def _add(parser: argparse.ArgumentParser, argument: CommandArgument) -> None:
    if not argument.name.startswith("-"):
        parser.add_argument(argument.name, help=argument.help)
    elif argument.flag:
        parser.add_argument(argument.name, action="store_true", help=argument.help)
    else:
        parser.add_argument(
            argument.name, required=argument.required, default=argument.default, help=argument.help
        )


def _handler(run: CommandRun | CommandRunWithArguments, *, with_arguments: bool) -> Any:
    def handle(args: argparse.Namespace) -> int:
        async def work(kernel: Kernel) -> str:
            if with_arguments:
                return await cast(CommandRunWithArguments, run)(kernel, vars(args))
            return await cast(CommandRun, run)(kernel)

        try:
            print(with_kernel(args, work))
        except ApiError as exc:
            print(f"hostgate: {exc.message}", file=sys.stderr)
            return 1
        return 0

    return handle
