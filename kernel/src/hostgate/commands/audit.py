"""``hostgate audit verify``: check the audit log's hash chain."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .common import with_kernel

if TYPE_CHECKING:
    from ..kernel import Kernel


def register(subparsers: Any) -> None:
    """Add ``audit``."""
    parser = subparsers.add_parser("audit", help="audit log tools")
    sub = parser.add_subparsers(dest="audit_command", metavar="ACTION", required=True)
    verify = sub.add_parser("verify", help="check that no entry was edited, inserted or deleted")
    verify.set_defaults(handler=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    """Walk the chain; exit 0 when intact, 1 at the first problem."""

    async def work(kernel: Kernel) -> Any:
        return await kernel.audit.verify_chain()

    result = with_kernel(args, work)
    if not result.ok:
        print(
            f"audit log TAMPERED: {result.problem} (entry id {result.entry_id}); "
            f"{result.checked} entries checked",
            file=sys.stderr,
        )
        return 1
    if result.head_seq is None:
        print("audit log is empty: nothing to verify")
        return 0
    print(f"audit log intact: {result.checked} entries verified")
    print(f"head: seq {result.head_seq} hash {result.head_hash}")
    print("keep the head somewhere safe: entries removed from the end show up only against it")
    return 0
