"""``hostgate settings get [key]`` / ``set key=value ...``: settings without the web UI.

For recovery (nobody can sign in, e.g. every login method switched off): works on
the database directly, checks each value as ``PUT /settings`` does (the same
lock-out guard included, which never refuses a change that makes things no worse)
and audits the change as ``settings.updated`` by ``cli``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..errors import ApiError
from .common import with_kernel

if TYPE_CHECKING:
    from ..descriptors import SettingSpec
    from ..kernel import Kernel


def register(subparsers: Any) -> None:
    """Add ``settings``."""
    parser = subparsers.add_parser("settings", help="read or change instance settings (recovery)")
    sub = parser.add_subparsers(dest="settings_command", metavar="ACTION", required=True)

    get = sub.add_parser("get", help="print every setting, or one (secrets masked)")
    get.add_argument("key", nargs="?", help="a setting key, e.g. auth.local_enabled")
    get.set_defaults(handler=run_get)

    put = sub.add_parser("set", help="change settings: key=value ... (checked, audited)")
    put.add_argument(
        "assignments",
        nargs="+",
        metavar="KEY=VALUE",
        help="e.g. auth.local_enabled=true; null clears a nullable one",
    )
    put.set_defaults(handler=run_set)


def parse_value(spec: SettingSpec, text: str) -> Any:
    """The value ``text`` stands for, by the setting's type (checked later by the registry)."""
    if text == "null" and spec.nullable:
        return None
    if spec.type is str:
        return text
    if spec.type is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        return text  # refused by the registry with its own message
    try:
        number = json.loads(text)
    except ValueError:
        return text
    return number if isinstance(number, int | float) and not isinstance(number, bool) else text


def split_assignment(text: str) -> tuple[str, str]:
    """``key=value`` into its parts; ValueError without ``=``."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise ValueError(f"{text!r}: write KEY=VALUE")
    return key.strip(), value


def run_get(args: argparse.Namespace) -> int:
    """Print ``key = value`` lines (JSON values), or one value."""

    async def work(kernel: Kernel) -> dict[str, Any] | None:
        view = kernel.settings.admin_view()
        if args.key is None:
            return view
        if args.key not in view:
            return None
        return {args.key: view[args.key]}

    shown = with_kernel(args, work)
    if shown is None:
        print(f"hostgate: unknown setting key: {args.key}", file=sys.stderr)
        return 2
    if args.key is not None:
        print(json.dumps(shown[args.key], ensure_ascii=False))
        return 0
    for key, value in shown.items():
        print(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return 0


def run_set(args: argparse.Namespace) -> int:
    """Check and store every assignment at once (none when one is refused), audited."""
    try:
        pairs = [split_assignment(text) for text in args.assignments]
    except ValueError as exc:
        print(f"hostgate: {exc}", file=sys.stderr)
        return 2

    async def work(kernel: Kernel) -> tuple[dict[str, Any], dict[str, Any]] | str:
        specs = kernel.settings.specs
        unknown = sorted(key for key, _ in pairs if key not in specs)
        if unknown:
            return f"unknown setting key(s): {', '.join(unknown)}"
        changes = {key: parse_value(specs[key], value) for key, value in pairs}
        try:
            return await kernel.settings.update(changes, via_cli=True)
        except ApiError as exc:
            return exc.message

    result = with_kernel(args, work)
    if isinstance(result, str):
        print(f"hostgate: {result}", file=sys.stderr)
        return 1
    before, after = result
    for key in sorted(after):
        old, new = json.dumps(before[key]), json.dumps(after[key])
        print(f"{key}: {old} -> {new}")
    print("saved; a running gateway reads it when restarted")
    return 0
