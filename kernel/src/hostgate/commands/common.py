"""Helpers shared by CLI commands: config from arguments, running the kernel offline."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import Config, load_config

if TYPE_CHECKING:
    from ..kernel import Kernel

T = TypeVar("T")


def register(subparsers: Any) -> None:
    """Nothing to add: the module holds helpers only."""


def config_from(args: argparse.Namespace, **overrides: Any) -> Config:
    """Config from ``--config`` / ``--data-dir`` and the environment."""
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = Path(args.data_dir)
    config_file = Path(args.config) if getattr(args, "config", None) else None
    return load_config(config_file=config_file, **overrides)


def with_kernel(
    args: argparse.Namespace, work: Callable[[Kernel], Awaitable[T]], *, shared: bool = False
) -> T:
    """Start the kernel (migrations, settings) without serving, run ``work``, stop.

    The command never runs the nodes' once-only work (it does not take the lease).
    ``shared``: the command changes what serving nodes hold in memory (a password
    reset closes that user's sockets on every node, a restore replaces the
    database under them), so it uses ``HOSTGATE_REDIS_URL`` when configured and
    fails clearly when Redis cannot be reached. Other commands only use the
    database and run without Redis, configured or not.
    """
    from ..app import create_app, kernel_of

    async def run() -> T:
        config = config_from(args)
        if not shared and config.redis_url:
            config = config.with_overrides(redis_url="")
        app = create_app(config)
        kernel = kernel_of(app)
        kernel.cluster.standby()
        kernel.serving = False
        await kernel.startup()
        try:
            return await work(kernel)
        finally:
            await kernel.shutdown()

    return asyncio.run(run())
