"""``hostgate``: the command line. Sub-commands live in ``hostgate.commands``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any

from . import commands
from .config import ConfigError


def _add_global_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--config", default=default, help="TOML configuration file")
    parser.add_argument("--data-dir", default=default, help="data directory (default ./data)")


class _CommandParser(argparse.ArgumentParser):
    """A sub-command's parser: it takes the global options too (``serve --data-dir X``).

    Their default is SUPPRESS, so a value given before the command is kept
    when none is given after it. Nested commands (``user create``) inherit this class.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _add_global_options(self, argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every command module registered.

    ``--config`` and ``--data-dir`` are accepted before or after the command.
    """
    parser = argparse.ArgumentParser(prog="hostgate", description="hostgate remote access gateway")
    _add_global_options(parser, None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_CommandParser)
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    # the packs' commands last: a name the kernel uses stays the kernel's
    for name in [n for n in names if n != "packs"] + ["packs"]:
        loaded = importlib.import_module(f"{commands.__name__}.{name}")
        loaded.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        result = handler(args)
    except ConfigError as exc:
        print(f"hostgate: configuration error: {exc}", file=sys.stderr)
        return 2
    return int(result or 0)
