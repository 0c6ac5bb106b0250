"""``hostgate``: the command line. Sub-commands live in ``hostgate.commands``."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from . import commands
from .config import ConfigError


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every command module registered."""
    parser = argparse.ArgumentParser(prog="hostgate", description="hostgate remote access gateway")
    parser.add_argument("--config", help="TOML configuration file")
    parser.add_argument("--data-dir", help="data directory (default ./data)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        loaded = importlib.import_module(f"{commands.__name__}.{module.name}")
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
