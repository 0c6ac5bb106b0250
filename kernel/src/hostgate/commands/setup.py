"""``hostgate setup``: create the first admin without the web UI (unattended installs)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import ApiError
from .common import with_kernel
from .user import add_password_options, fail, read_password

if TYPE_CHECKING:
    from ..kernel import Kernel

USERNAME_ENV = "HOSTGATE_ADMIN_USERNAME"
PASSWORD_ENV = "HOSTGATE_ADMIN_PASSWORD"


def register(subparsers: Any) -> None:
    """Add ``setup``."""
    parser = subparsers.add_parser("setup", help="create the first admin (only while none exists)")
    parser.add_argument("--username", help=f"admin username (or ${USERNAME_ENV})")
    parser.add_argument("--display-name", default="", help="display name (default: username)")
    add_password_options(parser, PASSWORD_ENV)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Create the first admin; exit 1 when setup was already done."""
    username = args.username or os.environ.get(USERNAME_ENV, "")
    if not username:
        print(f"hostgate: give --username or set ${USERNAME_ENV}", file=sys.stderr)
        return 2
    try:
        password = read_password(args, PASSWORD_ENV)

        async def work(kernel: Kernel) -> Any:
            return await kernel.accounts.setup_first_admin(
                username=username, password=password, display_name=args.display_name
            )

        user = with_kernel(args, work)
    except ApiError as error:
        return fail(error)
    print(f"created admin {user.username} (id {user.id})")
    return 0
