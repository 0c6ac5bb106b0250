"""``hostgate plugins``: every installed pack, what it provides, and its state."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..plugins import PluginConflict, PluginHost


def register(subparsers: Any) -> None:
    """Add ``plugins``."""
    parser = subparsers.add_parser("plugins", help="list installed plugin packs")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def inventory() -> list[dict[str, Any]]:
    """Discover packs (honouring HOSTGATE_DISABLE_PLUGINS) and what each contributes."""
    disabled = [
        n.strip() for n in os.environ.get("HOSTGATE_DISABLE_PLUGINS", "").split(",") if n.strip()
    ]
    host = PluginHost()
    host.load(entry_points=True, disabled=disabled)
    keys = {
        "register_protocols": lambda p: p.name,
        "register_login_methods": lambda m: m.name,
        "register_second_factors": lambda f: f.name,
        "register_channels": lambda c: c.type,
        "register_settings": lambda s: s.key,
        "register_blueprints": lambda b: b.name,
        "register_commands": lambda c: c.name,
    }
    for hook, key in keys.items():
        try:
            host.collect(hook, key=key)
        except PluginConflict as exc:
            for pack in host.packs:
                if pack.name in str(exc):
                    pack.state, pack.reason = "failed", str(exc)
    host.blueprints()
    host.pages()
    host.note_permissions()
    return [pack.to_json() for pack in sorted(host.packs, key=lambda p: p.name)]


def run(args: argparse.Namespace) -> int:
    """Print the inventory."""
    packs = inventory()
    if args.json:
        print(json.dumps({"plugins": packs}, indent=2))
        return 0
    if not packs:
        print("no plugin packs installed")
        return 0
    for pack in packs:
        state = pack["state"] + (f": {pack['reason']}" if pack["reason"] else "")
        print(f"{pack['name']:<12} {pack['distribution']:<22} {pack['version']:<10} {state}")
        listed = ("settings:", "permissions:")
        provides = [p for p in pack["provides"] if not p.startswith(listed)]
        if provides:
            print(f"{'':<12} provides {', '.join(provides)}")
        if pack["settings"]:
            print(f"{'':<12} settings {', '.join(pack['settings'])}")
        if pack["permissions"]:
            print(f"{'':<12} permissions {', '.join(pack['permissions'])}")
    return 0
