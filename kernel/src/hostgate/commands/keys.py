"""``hostgate keys rotate|rotate-signing``: re-encrypt every secret; invalidate sessions."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .common import with_kernel

if TYPE_CHECKING:
    from ..kernel import Kernel


def register(subparsers: Any) -> None:
    """Add ``keys``."""
    parser = subparsers.add_parser("keys", help="encryption and signing keys")
    sub = parser.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    rotate = sub.add_parser("rotate", help="re-encrypt every secret under a new key")
    rotate.add_argument("--new-key", help="64 hex characters (default: generate one)")
    rotate.set_defaults(handler=run_rotate)
    signing = sub.add_parser("rotate-signing", help="new token-signing key; logs everyone out")
    signing.set_defaults(handler=run_rotate_signing)


def run_rotate(args: argparse.Namespace) -> int:
    """Rotate the encryption key."""

    async def work(kernel: Kernel) -> Any:
        return await kernel.key_rotation.rotate_encryption_key(args.new_key)

    result = with_kernel(args, work)
    print(f"re-encrypted {result.count} secrets under key {result.key_id}")
    if result.key_file is None:
        print("set HOSTGATE_ENCRYPTION_KEY to the new key before the next start:")
        print(result.key_hex)
    else:
        print(f"the new key is in {result.key_file}")
    return 0


def run_rotate_signing(args: argparse.Namespace) -> int:
    """Rotate the token-signing key."""

    async def work(kernel: Kernel) -> int:
        count: int = await kernel.identity.rotate_signing_key()
        return count

    count = with_kernel(args, work)
    print(f"new token-signing key; {count} sessions revoked")
    return 0
